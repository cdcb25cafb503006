package podview

import (
	v1 "k8s.io/api/core/v1"

	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// resources converts requests and limits to canonical integer units.
func resources(r v1.ResourceRequirements) *typesv1.Resources {
	if len(r.Requests) == 0 && len(r.Limits) == 0 {
		return nil
	}
	return &typesv1.Resources{Requests: ResourceList(r.Requests), Limits: ResourceList(r.Limits)}
}

// ResourceList converts a Kubernetes resource list: CPU in millicores,
// everything else in base units (bytes, counts). Absent resources stay
// unset, which differs from zero.
func ResourceList(list v1.ResourceList) *typesv1.ResourceList {
	if len(list) == 0 {
		return nil
	}
	out := &typesv1.ResourceList{}
	for name, q := range list {
		switch name {
		case v1.ResourceCPU:
			v := q.MilliValue()
			out.CpuMillis = &v
		case v1.ResourceMemory:
			v := q.Value()
			out.MemoryBytes = &v
		case v1.ResourceEphemeralStorage:
			v := q.Value()
			out.EphemeralStorageBytes = &v
		case v1.ResourcePods:
			// Pods are a node resource, not a container one; carried in other.
			fallthrough
		default:
			if out.Other == nil {
				out.Other = map[string]int64{}
			}
			out.Other[string(name)] = q.Value()
		}
	}
	return out
}
