package evictionengine

import (
	"fmt"
	"strings"

	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// Texts and annotation keys of pkg/kubelet/eviction/helpers.go, verbatim:
// tools and people match on them.
const (
	// Reason is the reason of an evicted pod's status and of a rejected admission.
	Reason                 = "Evicted"
	nodeLowMessageFmt      = "The node was low on resource: %v. "
	thresholdMetMessageFmt = "Threshold quantity: %v, available: %v. "
	containerMessageFmt    = "Container %s was using %s, request is %s, has larger consumption of %v. "
	podMessageFmt          = "Pod %s was using %s, request is %s, has larger consumption of %v. "

	// OffendingContainersKey lists the containers that used more than they requested.
	OffendingContainersKey = "offending_containers"
	// OffendingContainersUsageKey lists their usage, in the same order.
	OffendingContainersUsageKey = "offending_containers_usage"
	// OffendingPodKey names a pod with pod-level resources.
	OffendingPodKey = "offending_pod"
	// OffendingPodUsageKey is that pod's usage.
	OffendingPodUsageKey = "offending_pod_usage"
	// StarvedResourceKey is the resource the node was low on.
	StarvedResourceKey = "starved_resource"
)

// evictionMessage is the status message and the event annotations of a pod
// evicted for threshold t (upstream evictionMessage). ps is nil when the
// request had no stats for the pod; the message then only names the
// resource and the threshold, and there are no annotations.
func evictionMessage(t Threshold, o observation, pod *typesv1.Pod, ps *typesv1.PodStats) (string, map[string]string) {
	resource := t.Signal.Resource()
	var msg strings.Builder
	fmt.Fprintf(&msg, nodeLowMessageFmt, resource)
	fmt.Fprintf(&msg, thresholdMetMessageFmt, thresholdText(t, o), formatAmount(t.Signal, o.available))
	annotations := map[string]string{}
	if ps == nil {
		return msg.String(), annotations
	}

	if resource == ResourceMemory && ps.GetMemory() != nil {
		if request, ok := memoryBytes(pod.GetPodResources().GetRequests()); ok {
			usage := formatBinarySI(clampInt64(ps.GetMemory().GetWorkingSetBytes()))
			fmt.Fprintf(&msg, podMessageFmt, pod.GetName(), usage, formatBinarySI(request), resource)
			annotations[OffendingPodKey] = pod.GetName()
			annotations[OffendingPodUsageKey] = usage
		}
	}

	// Ephemeral containers cannot set requests and would always be blamed,
	// so upstream looks only at regular, init and sidecar containers.
	containers := append(append([]*typesv1.Container(nil), pod.GetContainers()...), pod.GetInitContainers()...)
	var offending, usages []string
	for _, cs := range ps.GetContainers() {
		for _, c := range containers {
			if c.GetName() != cs.GetName() {
				continue
			}
			usage, measured := containerUsage(cs, resource)
			if request := containerRequest(c, resource); measured && usage > request {
				fmt.Fprintf(&msg, containerMessageFmt, c.GetName(), formatBinarySI(usage), formatBinarySI(request), resource)
				offending = append(offending, c.GetName())
				usages = append(usages, formatBinarySI(usage))
			}
			break
		}
	}
	annotations[OffendingContainersKey] = strings.Join(offending, ",")
	annotations[OffendingContainersUsageKey] = strings.Join(usages, ",")
	annotations[StarvedResourceKey] = string(resource)
	return msg.String(), annotations
}

// thresholdText is the threshold quantity as upstream prints it: the
// configured quantity, or a percentage resolved to binary units.
func thresholdText(t Threshold, o observation) string {
	if t.Value.Percentage == 0 {
		return t.Value.String()
	}
	return formatBinarySI(t.Value.resolve(o.capacity))
}

// containerUsage is what a container uses of the resource, for the message;
// upstream names containers only for memory and ephemeral storage.
func containerUsage(cs *typesv1.ContainerStats, r Resource) (int64, bool) {
	switch r {
	case ResourceMemory:
		if m := cs.GetMemory(); m != nil && m.WorkingSetBytes != nil {
			return clampInt64(*m.WorkingSetBytes), true
		}
	case ResourceEphemeralStorage:
		rootfs, logs := cs.GetRootfs(), cs.GetLogs()
		if rootfs != nil && rootfs.UsedBytes != nil && logs != nil && logs.UsedBytes != nil {
			return clampInt64(*rootfs.UsedBytes) + clampInt64(*logs.UsedBytes), true
		}
	}
	return 0, false
}
