package evictionengine

import (
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// resourceField picks one resource out of a ResourceList; nil when unset.
type resourceField func(*typesv1.ResourceList) *int64

func memoryField(rl *typesv1.ResourceList) *int64 {
	if rl == nil {
		return nil
	}
	return rl.MemoryBytes
}

func ephemeralStorageField(rl *typesv1.ResourceList) *int64 {
	if rl == nil {
		return nil
	}
	return rl.EphemeralStorageBytes
}

// memoryBytes is a list's memory, if set.
func memoryBytes(rl *typesv1.ResourceList) (int64, bool) { return lookup(memoryField(rl)) }

func lookup(v *int64) (int64, bool) {
	if v == nil {
		return 0, false
	}
	return *v, true
}

// fieldOf is the field that holds the resource in a ResourceList; nil for
// resources a pod cannot request (inodes, pids).
func fieldOf(r Resource) resourceField {
	switch r {
	case ResourceMemory:
		return memoryField
	case ResourceEphemeralStorage:
		return ephemeralStorageField
	}
	return nil
}

func requestsOf(r *typesv1.Resources) *typesv1.ResourceList { return r.GetRequests() }
func limitsOf(r *typesv1.Resources) *typesv1.ResourceList   { return r.GetLimits() }

// podAggregate is a pod's total of one resource over its containers, as
// k8s.io/component-helpers resource.PodRequests and PodLimits compute it:
// regular containers and sidecars (restartable init containers) run side by
// side and add up; each other init container runs alone next to the
// sidecars started before it; the pod needs the larger of the two. found is
// false when no container sets the resource.
func podAggregate(pod *typesv1.Pod, side func(*typesv1.Resources) *typesv1.ResourceList, field resourceField) (total int64, found bool) {
	for _, c := range pod.GetContainers() {
		if v, ok := lookup(field(side(c.GetResources()))); ok {
			total += v
			found = true
		}
	}
	// A sidecar alone never needs more than total, which counts every
	// sidecar; only ordinary init containers can raise the peak.
	var sidecars, initPeak int64
	for _, c := range pod.GetInitContainers() {
		v, ok := lookup(field(side(c.GetResources())))
		found = found || ok
		if c.GetRestartable() {
			total += v
			sidecars += v
			continue
		}
		initPeak = max(initPeak, v+sidecars)
	}
	return max(total, initPeak), found
}

// podRequest is the pod's request for the resource (upstream
// GetResourceRequestQuantity); 0 for resources a pod cannot request.
// Pod-level resources replace the containers' sum where Kubernetes supports
// them (memory, not ephemeral storage).
func podRequest(pod *typesv1.Pod, r Resource) int64 {
	field := fieldOf(r)
	if field == nil {
		return 0
	}
	if r == ResourceMemory {
		if v, ok := lookup(field(pod.GetPodResources().GetRequests())); ok {
			return v
		}
	}
	total, _ := podAggregate(pod, requestsOf, field)
	return total
}

// containerRequest is one container's request for the resource; 0 when unset.
func containerRequest(c *typesv1.Container, r Resource) int64 {
	field := fieldOf(r)
	if field == nil {
		return 0
	}
	v, _ := lookup(field(c.GetResources().GetRequests()))
	return v
}

// podUsage is how much of the resource the pod uses, counting for disk
// resources only the filesystems in scope (upstream podDiskUsage).
func podUsage(pod *typesv1.Pod, ps *typesv1.PodStats, r Resource, scope fsScope) int64 {
	switch r {
	case ResourceMemory:
		return clampInt64(ps.GetMemory().GetWorkingSetBytes())
	case ResourcePIDs:
		return clampInt64(ps.GetProcessStats().GetProcessCount())
	}
	used := func(fs *typesv1.FsStats) int64 {
		if r == ResourceInodes {
			return clampInt64(fs.GetInodesUsed())
		}
		return clampInt64(fs.GetUsedBytes())
	}
	var total int64
	for _, c := range ps.GetContainers() {
		if scope&fsRootfs != 0 {
			total += used(c.GetRootfs())
		}
		if scope&fsLogs != 0 {
			total += used(c.GetLogs())
		}
	}
	if scope&fsLocalVolumes != 0 {
		for _, v := range pod.GetVolumes() {
			if !isLocalVolume(v) {
				continue
			}
			for _, vs := range ps.GetVolumeStats() {
				if vs.GetName() == v.GetName() {
					total += used(vs.GetFs())
					break
				}
			}
		}
	}
	return total
}

// isLocalVolume reports volumes that use the node's disk for the pod's
// lifetime (upstream localVolumeNames: hostPath plus IsLocalEphemeralVolume).
func isLocalVolume(v *typesv1.Volume) bool {
	switch v.GetType() {
	case "hostPath", "configMap", "gitRepo":
		return true
	case "emptyDir":
		return v.GetMedium() == ""
	}
	return false
}
