package status

import (
	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/sdk/nodefacts"
)

// GetPodQOS returns the pod's QoS class: the one its status records, or
// else the computed one, as upstream's qos.GetPodQOS.
func GetPodQOS(pod *v1.Pod) v1.PodQOSClass {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass
	}
	return ComputePodQOS(pod)
}

// ComputePodQOS computes a pod's QoS class from its requests and limits
// with the formula plugins use too (nodefacts.ComputeQOS, upstream's
// qos.ComputePodQOS).
func ComputePodQOS(pod *v1.Pod) v1.PodQOSClass {
	var podLevel *nodefacts.Requirements
	if res := pod.Spec.Resources; res != nil {
		r := qosRequirements(*res)
		podLevel = &r
	}
	containers := make([]nodefacts.Requirements, 0, len(pod.Spec.Containers)+len(pod.Spec.InitContainers))
	for _, list := range [][]v1.Container{pod.Spec.Containers, pod.Spec.InitContainers} {
		for i := range list {
			containers = append(containers, qosRequirements(list[i].Resources))
		}
	}
	return v1.PodQOSClass(nodefacts.ComputeQOS(podLevel, containers))
}

// qosRequirements are r's CPU and memory in the wire's units (millicores
// and bytes, rounded up; podview.ResourceList).
func qosRequirements(r v1.ResourceRequirements) nodefacts.Requirements {
	return nodefacts.Requirements{Requests: qosAmounts(r.Requests), Limits: qosAmounts(r.Limits)}
}

func qosAmounts(list v1.ResourceList) nodefacts.CPUMemory {
	return nodefacts.CPUMemory{CPUMillis: list.Cpu().MilliValue(), MemoryBytes: list.Memory().Value()}
}
