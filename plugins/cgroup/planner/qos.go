package planner

import (
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk/nodefacts"
)

// The QoS classes (v1.PodQOSClass).
const (
	Guaranteed = string(nodefacts.Guaranteed)
	Burstable  = string(nodefacts.Burstable)
	BestEffort = string(nodefacts.BestEffort)
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

// ComputePodQOS evaluates a pod's resources with the formula the core uses
// too (nodefacts.ComputeQOS, upstream's ComputePodQOS).
func ComputePodQOS(pod *typesv1.Pod) string {
	var podLevel *nodefacts.Requirements
	if pr := pod.GetPodResources(); pr != nil {
		r := nodefacts.Requirements{Requests: qosAmounts(pr.GetRequests()), Limits: qosAmounts(pr.GetLimits())}
		podLevel = &r
	}
	containers := make([]nodefacts.Requirements, 0, len(pod.GetContainers())+len(pod.GetInitContainers()))
	for _, list := range [][]*typesv1.Container{pod.GetContainers(), pod.GetInitContainers()} {
		for _, c := range list {
			containers = append(containers, nodefacts.Requirements{Requests: qosAmounts(requestsOf(c)), Limits: qosAmounts(limitsOf(c))})
		}
	}
	return string(nodefacts.ComputeQOS(podLevel, containers))
}

func qosAmounts(list *typesv1.ResourceList) nodefacts.CPUMemory {
	return nodefacts.CPUMemory{CPUMillis: list.GetCpuMillis(), MemoryBytes: list.GetMemoryBytes()}
}
