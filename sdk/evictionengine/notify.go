package evictionengine

import (
	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
)

// The cgroups memory notifications watch, relative to the cgroup root.
const (
	nodeCgroup        = ""
	allocatableCgroup = "/kubepods"
)

// memoryNotifications asks the core to arm kernel notifications at the memory
// usage where each memory threshold would be met, so that a cycle starts at
// once instead of at the next tick (upstream memoryThresholdNotifier).
//
// The kernel watches usage, which counts the page cache, while the signals use
// the working set, which leaves inactive file pages out. The level is thus
// capacity - threshold + inactive file, with inactive file = usage - working
// set of the cgroup watched: the node's from its own memory stats, /kubepods'
// from the "pods" system container, as upstream. Both must come from the
// cgroup whose working set the signal uses, so that the kernel fires when
// the signal is met: usage of /kubepods also counts page cache that no
// listed pod owns (a deleted pod's), and a level from the pods' own stats
// alone is passed before the signal is met, then never signalled again
// (issue 18). Without the system container (the core's own measurement),
// the pods' stats summed, which the allocatable signal then uses too.
func memoryNotifications(thresholds []Threshold, obs observations, req *evictionv1.SynchronizeRequest) []*evictionv1.MemoryNotification {
	var out []*evictionv1.MemoryNotification
	for _, t := range thresholds {
		o, observed := obs[t.Signal]
		if !observed {
			continue
		}
		var cgroup string
		var inactiveFile int64
		switch t.Signal {
		case SignalMemoryAvailable:
			mem := req.GetNodeStats().GetMemory()
			if mem == nil || mem.UsageBytes == nil {
				continue
			}
			cgroup, inactiveFile = nodeCgroup, inactive(mem.GetUsageBytes(), mem.GetWorkingSetBytes())
		case SignalAllocatableMemoryAvailable:
			cgroup = allocatableCgroup
			if pods := podsCgroupMemory(req.GetNodeStats()); pods != nil {
				inactiveFile = inactive(pods.GetUsageBytes(), pods.GetWorkingSetBytes())
				break
			}
			for _, ps := range req.GetPodStats() {
				inactiveFile += inactive(ps.GetMemory().GetUsageBytes(), ps.GetMemory().GetWorkingSetBytes())
			}
		default:
			continue
		}
		if level := o.capacity - t.Value.resolve(o.capacity) + inactiveFile; level > 0 {
			out = append(out, &evictionv1.MemoryNotification{Cgroup: cgroup, UsageBytes: uint64(level)})
		}
	}
	return out
}

// inactive is the page cache the working set leaves out; never negative,
// even when stats taken a moment apart disagree.
func inactive(usage, workingSet uint64) int64 {
	if usage < workingSet {
		return 0
	}
	return clampInt64(usage - workingSet)
}
