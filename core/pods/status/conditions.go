package status

import (
	"fmt"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/runtime/container"
)

// Condition reasons, upstream's (pkg/kubelet/status/generate.go).
const (
	// UnknownContainerStatuses: no container status is known.
	UnknownContainerStatuses = "UnknownContainerStatuses"
	// PodCompleted: all containers succeeded.
	PodCompleted = "PodCompleted"
	// PodFailed: the pod failed, and its containers with it.
	PodFailed = "PodFailed"
	// ContainersNotReady: a container is not ready.
	ContainersNotReady = "ContainersNotReady"
	// ContainersNotInitialized: an init container has not succeeded.
	ContainersNotInitialized = "ContainersNotInitialized"
	// ReadinessGatesNotReady: a readiness gate is not ready.
	ReadinessGatesNotReady = "ReadinessGatesNotReady"
)

// conditionsByKubelet are the condition types the node agent owns, as
// upstream's PodConditionsByKubelet with PodReadyToStartContainers (whose
// gate is on).
var conditionsByKubelet = []v1.PodConditionType{
	v1.PodScheduled, v1.PodReady, v1.PodInitialized, v1.ContainersReady,
	v1.PodResizeInProgress, v1.PodResizePending, v1.PodReadyToStartContainers,
}

// IsConditionByKubelet reports whether the node agent owns conditions of
// type t: the API server's syncer writes them and keeps others'.
func IsConditionByKubelet(t v1.PodConditionType) bool {
	for _, c := range conditionsByKubelet {
		if c == t {
			return true
		}
	}
	return false
}

// IsConditionSharedByKubelet: conditions others set too, which the node
// agent may add (DisruptionTarget, on eviction).
func IsConditionSharedByKubelet(t v1.PodConditionType) bool { return t == v1.DisruptionTarget }

// condition builds a kubelet-owned condition. observedGeneration is the
// pod's generation, as upstream with PodObservedGenerationTracking on (its
// 1.34 default).
func condition(pod *v1.Pod, t v1.PodConditionType, s v1.ConditionStatus, reason, message string) v1.PodCondition {
	return v1.PodCondition{Type: t, ObservedGeneration: pod.Generation, Status: s, Reason: reason, Message: message}
}

// findCondition returns the condition of type t in conditions, or nil.
func findCondition(conditions []v1.PodCondition, t v1.PodConditionType) *v1.PodCondition {
	for i := range conditions {
		if conditions[i].Type == t {
			return &conditions[i]
		}
	}
	return nil
}

// replaceOrAppendCondition puts c in place of the condition of its type,
// or appends it.
func replaceOrAppendCondition(conditions []v1.PodCondition, c *v1.PodCondition) []v1.PodCondition {
	if existing := findCondition(conditions, c.Type); existing != nil {
		*existing = *c
		return conditions
	}
	return append(conditions, *c)
}

// notReadyMessage is upstream's "containers with unknown status: [a],
// containers with <what> status: [b c]".
func notReadyMessage(unknown []string, what string, names []string) string {
	var parts []string
	if len(unknown) > 0 {
		parts = append(parts, fmt.Sprintf("containers with unknown status: %s", unknown))
	}
	if len(names) > 0 {
		parts = append(parts, fmt.Sprintf("containers with %s status: %s", what, names))
	}
	return strings.Join(parts, ", ")
}

// containersReadyCondition is upstream's GenerateContainersReadyCondition:
// true when every container and sidecar is ready.
func containersReadyCondition(pod *v1.Pod, statuses []v1.ContainerStatus, phase v1.PodPhase) v1.PodCondition {
	if statuses == nil {
		return condition(pod, v1.ContainersReady, v1.ConditionFalse, UnknownContainerStatuses, "")
	}
	var unknown, unready []string
	check := func(name string) {
		if s, ok := findStatus(statuses, name); !ok {
			unknown = append(unknown, name)
		} else if !s.Ready {
			unready = append(unready, name)
		}
	}
	for i := range pod.Spec.InitContainers {
		if isRestartableInitContainer(&pod.Spec.InitContainers[i]) {
			check(pod.Spec.InitContainers[i].Name)
		}
	}
	for _, c := range pod.Spec.Containers {
		check(c.Name)
	}
	if (phase == v1.PodSucceeded && len(unknown) == 0) || phase == v1.PodFailed {
		return terminalPhaseCondition(pod, v1.ContainersReady, phase)
	}
	if msg := notReadyMessage(unknown, "unready", unready); msg != "" {
		return condition(pod, v1.ContainersReady, v1.ConditionFalse, ContainersNotReady, msg)
	}
	return condition(pod, v1.ContainersReady, v1.ConditionTrue, "", "")
}

// podReadyCondition is upstream's GeneratePodReadyCondition: ContainersReady
// ANDed with the readiness gates.
func podReadyCondition(pod *v1.Pod, conditions []v1.PodCondition, statuses []v1.ContainerStatus, phase v1.PodPhase) v1.PodCondition {
	containersReady := containersReadyCondition(pod, statuses, phase)
	if containersReady.Status != v1.ConditionTrue {
		return condition(pod, v1.PodReady, containersReady.Status, containersReady.Reason, containersReady.Message)
	}
	var unready []string
	for _, gate := range pod.Spec.ReadinessGates {
		c := findCondition(conditions, gate.ConditionType)
		switch {
		case c == nil:
			unready = append(unready, fmt.Sprintf("corresponding condition of pod readiness gate %q does not exist.", string(gate.ConditionType)))
		case c.Status != v1.ConditionTrue:
			unready = append(unready, fmt.Sprintf("the status of pod readiness gate %q is not \"True\", but %v", string(gate.ConditionType), c.Status))
		}
	}
	if len(unready) != 0 {
		return condition(pod, v1.PodReady, v1.ConditionFalse, ReadinessGatesNotReady, strings.Join(unready, ", "))
	}
	return condition(pod, v1.PodReady, v1.ConditionTrue, "", "")
}

// initializedCondition is upstream's GeneratePodInitializedCondition: true
// once every regular init container succeeded and every sidecar started,
// or once a regular container has run.
func initializedCondition(pod *v1.Pod, statuses []v1.ContainerStatus, phase v1.PodPhase) v1.PodCondition {
	if statuses == nil && len(pod.Spec.InitContainers) > 0 {
		return condition(pod, v1.PodInitialized, v1.ConditionFalse, UnknownContainerStatuses, "")
	}
	var unknown, incomplete []string
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		s, ok := findStatus(statuses, c.Name)
		switch {
		case !ok:
			unknown = append(unknown, c.Name)
		case !initContainerInitialized(c, &s):
			incomplete = append(incomplete, c.Name)
		}
	}
	if phase == v1.PodSucceeded && len(unknown) == 0 {
		return condition(pod, v1.PodInitialized, v1.ConditionTrue, PodCompleted, "")
	}
	if anyRegularContainerStarted(&pod.Spec, statuses) {
		return condition(pod, v1.PodInitialized, v1.ConditionTrue, "", "")
	}
	if msg := notReadyMessage(unknown, "incomplete", incomplete); msg != "" {
		return condition(pod, v1.PodInitialized, v1.ConditionFalse, ContainersNotInitialized, msg)
	}
	return condition(pod, v1.PodInitialized, v1.ConditionTrue, "", "")
}

func initContainerInitialized(c *v1.Container, s *v1.ContainerStatus) bool {
	if isRestartableInitContainer(c) {
		return s.Started != nil && *s.Started
	}
	return s.Ready
}

// anyRegularContainerStarted is upstream's HasAnyRegularContainerStarted:
// a regular container is running or has run.
func anyRegularContainerStarted(spec *v1.PodSpec, statuses []v1.ContainerStatus) bool {
	for _, s := range statuses {
		if containerSpec(spec.Containers, s.Name) != nil && (s.State.Running != nil || s.State.Terminated != nil) {
			return true
		}
	}
	return false
}

// readyToStartContainersCondition is upstream's
// GeneratePodReadyToStartContainersCondition: true while the pod's sandbox
// (with its network) is in place and need not be recreated.
func readyToStartContainersCondition(pod *v1.Pod, runtime *container.PodStatus) v1.PodCondition {
	if sandboxNeedsRecreation(pod, runtime) {
		return condition(pod, v1.PodReadyToStartContainers, v1.ConditionFalse, "", "")
	}
	return condition(pod, v1.PodReadyToStartContainers, v1.ConditionTrue, "", "")
}

// sandboxNeedsRecreation is upstream's PodSandboxChanged: there is no
// sandbox, more than one is ready, the newest is not ready, its network
// namespace mode is not the pod's, or a pod outside the host network has
// no IP.
func sandboxNeedsRecreation(pod *v1.Pod, runtime *container.PodStatus) bool {
	if len(runtime.Sandboxes) == 0 {
		return true
	}
	ready := 0
	for _, s := range runtime.Sandboxes {
		if s.State == container.SandboxReady {
			ready++
		}
	}
	newest := runtime.Sandboxes[0]
	return ready > 1 ||
		newest.State != container.SandboxReady ||
		newest.HostNetwork != pod.Spec.HostNetwork ||
		(!pod.Spec.HostNetwork && len(newest.IPs) == 0)
}

// terminalPhaseCondition is a readiness condition of a pod that is done:
// false, with the reason PodCompleted or PodFailed.
func terminalPhaseCondition(pod *v1.Pod, t v1.PodConditionType, phase v1.PodPhase) v1.PodCondition {
	reason := ""
	switch phase {
	case v1.PodFailed:
		reason = PodFailed
	case v1.PodSucceeded:
		reason = PodCompleted
	}
	return condition(pod, t, v1.ConditionFalse, reason, "")
}
