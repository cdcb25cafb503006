package nodefacts

import typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"

// QOSClass is a pod's quality of service class (v1.PodQOSClass).
type QOSClass string

// The QoS classes.
const (
	Guaranteed QOSClass = "Guaranteed"
	Burstable  QOSClass = "Burstable"
	BestEffort QOSClass = "BestEffort"
)

// CPUMemory is the part of a resource list that decides QoS: CPU in
// millicores and memory in bytes, rounded up as the wire carries them
// (proto types.v1.ResourceList). An amount that is not positive counts as
// not set, as upstream skips it.
type CPUMemory struct {
	CPUMillis, MemoryBytes int64
}

// Requirements are a container's or a pod's requests and limits.
type Requirements struct {
	Requests, Limits CPUMemory
}

// add adds b's positive amounts to a.
func (a *CPUMemory) add(b CPUMemory) {
	a.CPUMillis += max(b.CPUMillis, 0)
	a.MemoryBytes += max(b.MemoryBytes, 0)
}

func (a CPUMemory) hasBoth() bool { return a.CPUMillis > 0 && a.MemoryBytes > 0 }

// ComputeQOS is upstream's ComputePodQOS (pkg/apis/core/v1/helper/qos,
// v1.34, PodLevelResources on by default): podLevel is the pod's own
// resources, nil when its spec has none; containers are its containers and
// init containers (ephemeral containers cannot set resources). With
// pod-level resources only those count. A pod is BestEffort without any CPU
// or memory request or limit; Guaranteed when CPU and memory limits are set
// (on the pod, or on every container) and the summed requests equal the
// summed limits; Burstable otherwise.
func ComputeQOS(podLevel *Requirements, containers []Requirements) QOSClass {
	var requests, limits CPUMemory
	guaranteed := true
	if podLevel != nil {
		requests.add(podLevel.Requests)
		limits.add(podLevel.Limits)
		guaranteed = podLevel.Limits.hasBoth()
	} else {
		for _, c := range containers {
			requests.add(c.Requests)
			limits.add(c.Limits)
			guaranteed = guaranteed && c.Limits.hasBoth()
		}
	}
	if requests == (CPUMemory{}) && limits == (CPUMemory{}) {
		return BestEffort
	}
	// Upstream: every request has an equal limit, and there are as many
	// limits as requests. With unset amounts at zero, the two are equal.
	if guaranteed && requests == limits {
		return Guaranteed
	}
	return Burstable
}

// PodQOS is a wire pod's class as upstream's GetPodQOS decides it: the
// class the pod already has, if any (it never changes once set), else the
// class its resources give. Every plugin deciding by class calls it, so
// that they cannot disagree on a pod.
func PodQOS(pod *typesv1.Pod) QOSClass {
	switch q := QOSClass(pod.GetQosClass()); q {
	case Guaranteed, Burstable, BestEffort:
		return q
	}
	return ComputePodQOS(pod)
}

// ComputePodQOS is ComputeQOS of a wire pod's resources.
func ComputePodQOS(pod *typesv1.Pod) QOSClass {
	amounts := func(l *typesv1.ResourceList) CPUMemory {
		return CPUMemory{CPUMillis: l.GetCpuMillis(), MemoryBytes: l.GetMemoryBytes()}
	}
	var podLevel *Requirements
	if pr := pod.GetPodResources(); pr != nil {
		podLevel = &Requirements{Requests: amounts(pr.GetRequests()), Limits: amounts(pr.GetLimits())}
	}
	containers := make([]Requirements, 0, len(pod.GetContainers())+len(pod.GetInitContainers()))
	for _, list := range [][]*typesv1.Container{pod.GetContainers(), pod.GetInitContainers()} {
		for _, c := range list {
			containers = append(containers, Requirements{Requests: amounts(c.GetResources().GetRequests()), Limits: amounts(c.GetResources().GetLimits())})
		}
	}
	return ComputeQOS(podLevel, containers)
}
