package status

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// GetPodQOS returns the pod's QoS class: the one its status records, or
// else the computed one, as upstream's qos.GetPodQOS.
func GetPodQOS(pod *v1.Pod) v1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	return ComputePodQOS(pod)
}

// isQOSResource reports whether a resource counts for QoS: CPU and memory.
func isQOSResource(name v1.ResourceName) bool {
	return name == v1.ResourceCPU || name == v1.ResourceMemory
}

// addQOSResources adds the positive CPU and memory quantities of list to
// sum and returns which ones it found.
func addQOSResources(sum, list v1.ResourceList) map[v1.ResourceName]bool {
	found := map[v1.ResourceName]bool{}
	for name, quantity := range list {
		if !isQOSResource(name) || quantity.Cmp(resource.Quantity{}) <= 0 {
			continue
		}
		found[name] = true
		total := quantity.DeepCopy()
		if prev, ok := sum[name]; ok {
			total.Add(prev)
		}
		sum[name] = total
	}
	return found
}

// ComputePodQOS computes a pod's QoS class from its requests and limits,
// as upstream's qos.ComputePodQOS with PodLevelResources on (the default
// from 1.34): BestEffort without any CPU or memory request or limit,
// Guaranteed when CPU and memory limits are set everywhere (on the pod
// when it has pod-level resources, else on every container and init
// container) and requests equal limits, Burstable otherwise.
func ComputePodQOS(pod *v1.Pod) v1.PodQOSClass {
	requests, limits := v1.ResourceList{}, v1.ResourceList{}
	guaranteed := true
	hasAllLimits := func(found map[v1.ResourceName]bool) bool {
		return found[v1.ResourceCPU] && found[v1.ResourceMemory]
	}
	if res := pod.Spec.Resources; res != nil {
		addQOSResources(requests, res.Requests)
		if len(res.Limits) > 0 && !hasAllLimits(addQOSResources(limits, res.Limits)) {
			guaranteed = false
		}
	} else {
		// Ephemeral containers cannot set resources.
		for _, containers := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
			for _, c := range containers {
				addQOSResources(requests, c.Resources.Requests)
				if !hasAllLimits(addQOSResources(limits, c.Resources.Limits)) {
					guaranteed = false
				}
			}
		}
	}
	if len(requests) == 0 && len(limits) == 0 {
		return v1.PodQOSBestEffort
	}
	if guaranteed {
		for name, req := range requests {
			if lim, ok := limits[name]; !ok || lim.Cmp(req) != 0 {
				guaranteed = false
				break
			}
		}
	}
	if guaranteed && len(requests) == len(limits) {
		return v1.PodQOSGuaranteed
	}
	return v1.PodQOSBurstable
}
