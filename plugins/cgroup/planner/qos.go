package planner

import (
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// The QoS classes (v1.PodQOSClass).
const (
	Guaranteed = "Guaranteed"
	Burstable  = "Burstable"
	BestEffort = "BestEffort"
)

// PodQOS is the pod's QoS class as upstream GetPodQOS decides it: the class
// the pod already has, if any (it never changes once set), else the class
// its resources give.
func PodQOS(pod *typesv1.Pod) string {
	switch q := pod.GetQosClass(); q {
	case Guaranteed, Burstable, BestEffort:
		return q
	}
	return ComputePodQOS(pod)
}

// ComputePodQOS evaluates a pod's resources as upstream ComputePodQOS
// (v1.34): only cpu and memory count. With pod-level resources, those
// decide. Otherwise a pod is BestEffort when no container (init containers
// included) sets a cpu or memory request or limit, Guaranteed when every
// container sets cpu and memory limits and the pod's summed requests equal
// its summed limits, and Burstable otherwise.
func ComputePodQOS(pod *typesv1.Pod) string {
	requests, limits := amounts{}, amounts{}
	guaranteed := true
	if pr := pod.GetPodResources(); pr != nil {
		addQOSResources(requests, amountsOf(pr.GetRequests()))
		if podLimits := amountsOf(pr.GetLimits()); len(podLimits) > 0 {
			addQOSResources(limits, podLimits)
			guaranteed = hasCPUAndMemory(podLimits)
		}
	} else {
		for _, list := range [][]*typesv1.Container{pod.GetContainers(), pod.GetInitContainers()} {
			for _, c := range list {
				addQOSResources(requests, amountsOf(requestsOf(c)))
				containerLimits := amountsOf(limitsOf(c))
				addQOSResources(limits, containerLimits)
				if !hasCPUAndMemory(containerLimits) {
					guaranteed = false
				}
			}
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return BestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim != req {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return Guaranteed
	}
	return Burstable
}

// addQOSResources adds the positive cpu and memory amounts of b to a
// (upstream processResourceList).
func addQOSResources(a, b amounts) {
	for _, name := range []string{resourceCPU, resourceMemory} {
		if v := b[name]; v > 0 {
			a[name] += v
		}
	}
}

// hasCPUAndMemory reports lists with positive cpu and memory amounts
// (upstream getQOSResources(...).HasAll(memory, cpu)).
func hasCPUAndMemory(a amounts) bool {
	return a[resourceCPU] > 0 && a[resourceMemory] > 0
}
