package evictionengine

import (
	"math"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// observation is one signal as observed in a request.
type observation struct {
	available int64
	capacity  int64
	// time is when the stats behind it were taken; zero when unknown.
	time time.Time
}

// observations holds the signals a request had the stats for. A threshold
// whose signal is missing is neither met nor reported.
type observations map[Signal]observation

// observe derives the signals from a request (upstream makeSignalObservations).
func observe(req *evictionv1.SynchronizeRequest) observations {
	obs := observations{}
	stats := req.GetNodeStats()
	memStats := stats.GetMemory()

	if memStats != nil && memStats.WorkingSetBytes != nil {
		workingSet := clampInt64(*memStats.WorkingSetBytes)
		// memory.available is capacity - working set. The node's capacity is
		// what the kubelet reports too; without it, fall back to the summary's
		// own available bytes, which cAdvisor computes the same way.
		capacity, ok := memoryBytes(req.GetNode().GetCapacity())
		if !ok && memStats.AvailableBytes != nil {
			capacity, ok = clampInt64(memStats.GetAvailableBytes())+workingSet, true
		}
		if ok {
			obs[SignalMemoryAvailable] = observation{available: capacity - workingSet, capacity: capacity, time: timeOf(memStats.GetTime())}
		}
	}

	// allocatableMemory.available is allocatable memory - the working set of
	// the cgroup that holds the pods (upstream: the "pods" system
	// container), which counts what no listed pod owns: page cache a
	// deleted pod left behind is charged to it, and is what the kernel
	// notification on that cgroup sees (notify.go). Without it, the pods'
	// working sets summed.
	if allocatable, ok := memoryBytes(req.GetNode().GetAllocatable()); ok {
		if pods := podsCgroupMemory(stats); pods != nil {
			obs[SignalAllocatableMemoryAvailable] = observation{available: allocatable - clampInt64(pods.GetWorkingSetBytes()), capacity: allocatable, time: timeOf(pods.GetTime())}
		} else {
			var podsWorkingSet int64
			for _, ps := range req.GetPodStats() {
				podsWorkingSet += clampInt64(ps.GetMemory().GetWorkingSetBytes())
			}
			obs[SignalAllocatableMemoryAvailable] = observation{available: allocatable - podsWorkingSet, capacity: allocatable, time: timeOf(memStats.GetTime())}
		}
	}

	observeFs(obs, stats.GetFs(), SignalNodeFsAvailable, SignalNodeFsInodesFree)
	observeFs(obs, stats.GetRuntime().GetImageFs(), SignalImageFsAvailable, SignalImageFsInodesFree)

	if rl := stats.GetRlimit(); rl != nil && rl.MaxPid != nil && rl.NumOfRunningProcesses != nil {
		obs[SignalPIDAvailable] = observation{available: rl.GetMaxPid() - rl.GetNumOfRunningProcesses(), capacity: rl.GetMaxPid(), time: timeOf(rl.GetTime())}
	}
	return obs
}

// systemContainerPods names the "pods" system container among the node's
// (the stats API's SystemContainerPods).
const systemContainerPods = "pods"

// podsCgroupMemory is the memory of the cgroup that holds every pod, from
// the "pods" system container, when the stats carry its working set and
// usage; nil otherwise (the core's own measurement has none).
func podsCgroupMemory(stats *typesv1.NodeStats) *typesv1.MemoryStats {
	for _, c := range stats.GetSystemContainers() {
		if c.GetName() != systemContainerPods {
			continue
		}
		if mem := c.GetMemory(); mem != nil && mem.WorkingSetBytes != nil && mem.UsageBytes != nil {
			return mem
		}
	}
	return nil
}

func observeFs(obs observations, fs *typesv1.FsStats, bytes, inodes Signal) {
	if fs == nil {
		return
	}
	if fs.AvailableBytes != nil && fs.CapacityBytes != nil {
		obs[bytes] = observation{available: clampInt64(fs.GetAvailableBytes()), capacity: clampInt64(fs.GetCapacityBytes()), time: timeOf(fs.GetTime())}
	}
	if fs.InodesFree != nil && fs.Inodes != nil {
		obs[inodes] = observation{available: clampInt64(fs.GetInodesFree()), capacity: clampInt64(fs.GetInodes()), time: timeOf(fs.GetTime())}
	}
}

// timeOf is a stats timestamp, zero when unset or out of range.
func timeOf(ts *timestamppb.Timestamp) time.Time {
	if !ts.IsValid() {
		return time.Time{}
	}
	return ts.AsTime()
}

// clampInt64 converts a stats counter to the signed arithmetic thresholds use.
func clampInt64(u uint64) int64 {
	if u > math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(u)
}
