package podview

import (
	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/pods/podsource"
	"github.com/microlet/microlet/core/pods/podspec"
)

// Priorities of the built-in priority classes (upstream scheduling API).
const (
	SystemCriticalPriority        = 2 * 1000000000
	systemClusterCriticalPriority = SystemCriticalPriority
	systemNodeCriticalPriority    = SystemCriticalPriority + 1000
)

// Priority is the pod's priority. Without an API server no admission
// resolves priorityClassName, so the two built-in classes are resolved here.
func Priority(pod *v1.Pod) int32 {
	if pod.Spec.Priority != nil {
		return *pod.Spec.Priority
	}
	switch pod.Spec.PriorityClassName {
	case "system-node-critical":
		return systemNodeCriticalPriority
	case "system-cluster-critical":
		return systemClusterCriticalPriority
	}
	return 0
}

// IsCritical reports pods that are never evicted or preempted. As upstream,
// static pods (from a manifest file or URL) are critical, and so is any pod
// of system-critical priority. Pods from microlet's push source are not
// static in this sense: the push source is how workloads reach a node
// without an API server, and treating them as critical would make eviction
// impossible in that mode.
func IsCritical(pod *v1.Pod) bool {
	switch pod.Annotations[podspec.ConfigSourceAnnotationKey] {
	case podsource.FileSource, podsource.HTTPSource:
		return true
	}
	return Priority(pod) >= SystemCriticalPriority
}
