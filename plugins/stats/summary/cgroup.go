package summary

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk/nodefacts"
)

// maxMemoryLimit is where a memory limit stops counting: the kernel
// reports "no limit" as a page-rounded huge number, and cadvisor treats
// anything beyond 2^62 as unlimited (the kubelet's isMemoryUnlimited).
const maxMemoryLimit = uint64(1) << 62

// cgroupCPU is a cgroup's CPUStats with the rate since the previous
// reading of key. As cadvisor's, both counters read 0 while unknown.
func cgroupCPU(c CgroupSample, key string, rates *CPURates) *typesv1.CPUStats {
	out := &typesv1.CPUStats{Time: timestamp(c.Time), UsageNanoCores: ptr(uint64(0)), UsageCoreNanoSeconds: ptr(uint64(0)), Psi: c.CPUPressure}
	if c.CPUUsageNanos != nil {
		out.UsageCoreNanoSeconds = ptr(*c.CPUUsageNanos)
		if rate := rates.Rate(key, c.Time, *c.CPUUsageNanos); rate != nil {
			out.UsageNanoCores = rate
		}
	}
	setCFS(out, c.CFS)
	return out
}

// setCFS adds a cgroup's CFS periods to out, when it has a quota (cfs not
// nil).
func setCFS(out *typesv1.CPUStats, cfs *CFSSample) {
	if cfs != nil {
		out.CfsPeriods, out.CfsThrottledPeriods = ptr(cfs.Periods), ptr(cfs.ThrottledPeriods)
	}
}

// cgroupMemory is a cgroup's MemoryStats. available is limit - working set
// when limit is a real limit, and left out otherwise.
func cgroupMemory(c CgroupSample, limit *uint64) *typesv1.MemoryStats {
	m := c.Memory
	if m == nil {
		return &typesv1.MemoryStats{Time: timestamp(c.Time), WorkingSetBytes: ptr(uint64(0))}
	}
	workingSet := workingSet(m)
	out := &typesv1.MemoryStats{
		Time:            timestamp(c.Time),
		UsageBytes:      ptr(m.Usage),
		WorkingSetBytes: ptr(workingSet),
		RssBytes:        ptr(m.RSS),
		PageFaults:      ptr(m.PageFaults),
		MajorPageFaults: ptr(m.MajorPageFaults),
		Psi:             c.MemoryPressure,
		CacheBytes:      ptr(m.Cache),
	}
	if limit != nil && *limit <= maxMemoryLimit {
		out.AvailableBytes = ptr(saturatingSub(*limit, workingSet))
	}
	return out
}

// workingSet is cadvisor's: usage less the inactive page cache.
func workingSet(m *MemorySample) uint64 { return nodefacts.WorkingSet(m.Usage, m.InactiveFile) }

// cgroupSwap is a cgroup's SwapStats, nil when swap is not accounted.
func cgroupSwap(c CgroupSample) *typesv1.SwapStats {
	if c.SwapUsage == nil {
		return nil
	}
	out := &typesv1.SwapStats{Time: timestamp(c.Time), SwapUsageBytes: ptr(*c.SwapUsage)}
	if c.SwapLimit != nil && *c.SwapLimit <= maxMemoryLimit {
		out.SwapAvailableBytes = ptr(saturatingSub(*c.SwapLimit, *c.SwapUsage))
	}
	return out
}

// cgroupIO is a cgroup's IOStats: pressure and block I/O per device, nil
// without either.
func cgroupIO(c CgroupSample) *typesv1.IOStats {
	if c.IOPressure == nil && len(c.DiskIO) == 0 {
		return nil
	}
	return &typesv1.IOStats{Time: timestamp(c.Time), Psi: c.IOPressure, Devices: c.DiskIO}
}

func saturatingSub(a, b uint64) uint64 {
	if a < b {
		return 0
	}
	return a - b
}

func ptr[T any](v T) *T { return &v }

// timestamp converts t; the zero time stays unset.
func timestamp(t time.Time) *timestamppb.Timestamp {
	if t.IsZero() {
		return nil
	}
	return timestamppb.New(t)
}

// orTime is ts, or fallback when the runtime left the time out.
func orTime(ts *timestamppb.Timestamp, fallback time.Time) *timestamppb.Timestamp {
	if ts != nil {
		return ts
	}
	return timestamp(fallback)
}
