package planner

import (
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// oom_score_adj values of upstream pkg/kubelet/qos/policy.go.
const (
	guaranteedOOMScoreAdj = -997
	besteffortOOMScoreAdj = 1000
)

// systemNodeCritical is the built-in priority class whose critical pods the
// OOM killer spares like Guaranteed ones.
const systemNodeCritical = "system-node-critical"

// containerOOMScoreAdj is a container's oom_score_adj as upstream
// GetContainerOOMScoreAdjust (v1.34) computes it. Burstable containers get
// 1000 - 1000*memoryRequest/memoryCapacity, within [3, 999]; with pod-level
// requests, the pod's request not claimed by its containers is shared out
// among them; a sidecar gets no more than the regular container with the
// smallest request.
func containerOOMScoreAdj(pod *typesv1.Pod, qos string, c *typesv1.Container, memoryCapacity int64) int64 {
	if pod.GetCritical() && pod.GetPriorityClassName() == systemNodeCritical {
		return guaranteedOOMScoreAdj
	}
	switch qos {
	case Guaranteed:
		return guaranteedOOMScoreAdj
	case BestEffort:
		return besteffortOOMScoreAdj
	}
	var unclaimed int64
	if podLevelRequestsSet(pod) {
		unclaimed = unclaimedPodMemoryPerContainer(pod)
	}
	adj := 1000 - (1000*(amountsOf(requestsOf(c))[resourceMemory]+unclaimed))/memoryCapacity
	if c.GetRestartable() {
		smallest := 1000 - (1000*(smallestRegularMemoryRequest(pod)+unclaimed))/memoryCapacity
		adj = min(adj, smallest)
	}
	switch {
	case adj < 1000+guaranteedOOMScoreAdj:
		// A Guaranteed container using all memory scores 10: stay above it.
		return 1000 + guaranteedOOMScoreAdj
	case adj == besteffortOOMScoreAdj:
		// Outlive BestEffort containers.
		return adj - 1
	}
	return adj
}

// smallestRegularMemoryRequest is the smallest memory request among the
// pod's regular containers (upstream minRegularContainerMemory).
func smallestRegularMemoryRequest(pod *typesv1.Pod) int64 {
	var smallest int64
	for i, c := range pod.GetContainers() {
		if m := amountsOf(requestsOf(c))[resourceMemory]; i == 0 || m < smallest {
			smallest = m
		}
	}
	return smallest
}

// unclaimedPodMemoryPerContainer is the pod-level memory request its
// containers do not request themselves, per container (upstream
// remainingPodMemReqPerContainer).
func unclaimedPodMemoryPerContainer(pod *typesv1.Pod) int64 {
	podRequest := amountsOf(pod.GetPodResources().GetRequests())[resourceMemory]
	if podRequest == 0 {
		return 0
	}
	containers := int64(len(pod.GetContainers()) + len(pod.GetInitContainers()))
	return (podRequest - aggregate(pod, requestsOf, nil)[resourceMemory]) / containers
}
