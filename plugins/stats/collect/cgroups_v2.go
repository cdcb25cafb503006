package collect

import (
	"errors"
	"io/fs"
	"path/filepath"
	"time"

	"github.com/prometheus/procfs"

	"github.com/microlet/microlet/plugins/stats/summary"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// memory.stat keys on cgroup v2, hierarchical by design.
const (
	v2InactiveFile = "inactive_file"
	v2Anon         = "anon"
	v2File         = "file"
	v2PageFaults   = "pgfault"
	v2MajorFaults  = "pgmajfault"
	v2UsageUsec    = "usage_usec"
)

func (c *Cgroups) readV2(path string, counters bool) (summary.CgroupSample, error) {
	dir := filepath.Join(c.root, path)
	if err := mustExist(dir); err != nil {
		return summary.CgroupSample{}, err
	}
	out := summary.CgroupSample{Time: time.Now()}
	cpu, err := optional(readKeyValues(filepath.Join(dir, "cpu.stat"), v2UsageUsec, cfsPeriods, cfsThrottled))
	if err != nil {
		return out, err
	}
	if cpu != nil {
		if usec, ok := (*cpu)[v2UsageUsec]; ok {
			out.CPUUsageNanos = ptr(usec * 1000)
		}
	}
	if counters {
		var cpuStat map[string]uint64
		if cpu != nil {
			cpuStat = *cpu
		}
		if out.CFS, out.DiskIO, err = c.cfsAndIO(path, cpuStat); err != nil {
			return out, err
		}
	}
	if out.Memory, err = memoryV2(dir); err != nil {
		return out, err
	}
	if out.SwapUsage, err = optional(readUint(filepath.Join(dir, "memory.swap.current"))); err != nil {
		return out, err
	}
	if out.SwapUsage != nil {
		if out.SwapLimit, err = readLimit(filepath.Join(dir, "memory.swap.max")); err != nil {
			return out, err
		}
	}
	for _, p := range []struct {
		file string
		dst  **typesv1.PSIStats
	}{{"cpu.pressure", &out.CPUPressure}, {"memory.pressure", &out.MemoryPressure}, {"io.pressure", &out.IOPressure}} {
		psi, err := optional(readPressure(filepath.Join(dir, p.file)))
		if err != nil {
			return out, err
		}
		if psi != nil {
			*p.dst = *psi
		}
	}
	return out, nil
}

// memoryV2 reads a non-root cgroup's memory; nil when the memory
// controller is not enabled there.
func memoryV2(dir string) (*summary.MemorySample, error) {
	usage, err := optional(readUint(filepath.Join(dir, "memory.current")))
	if err != nil || usage == nil {
		return nil, err
	}
	limit, err := readLimit(filepath.Join(dir, "memory.max"))
	if err != nil {
		return nil, err
	}
	out := &summary.MemorySample{Usage: *usage, Limit: limit}
	return out, memoryStatV2(dir, out)
}

// memoryStatV2 fills out from dir's memory.stat.
func memoryStatV2(dir string, out *summary.MemorySample) error {
	stat, err := readKeyValues(filepath.Join(dir, "memory.stat"), v2InactiveFile, v2Anon, v2File, v2PageFaults, v2MajorFaults)
	if err != nil {
		return err
	}
	out.InactiveFile, out.RSS, out.Cache = stat[v2InactiveFile], stat[v2Anon], stat[v2File]
	out.PageFaults, out.MajorPageFaults = stat[v2PageFaults], stat[v2MajorFaults]
	return nil
}

// ReadRoot reads the root cgroup. The v2 root has no memory.current: its
// usage is MemTotal - MemFree, as runc's rootStatsFromMeminfo takes it,
// with the root's memory.stat when the kernel has one and /proc/meminfo's
// inactive file pages and anonymous pages otherwise. counters is Read's.
func (c *Cgroups) ReadRoot(meminfo procfs.Meminfo, counters bool) (summary.CgroupSample, error) {
	out, err := c.Read("/", counters)
	if err != nil || out.Memory != nil || !c.v2 {
		return out, err
	}
	if meminfo.MemTotalBytes == nil || meminfo.MemFreeBytes == nil {
		return out, nil
	}
	m := &summary.MemorySample{Usage: *meminfo.MemTotalBytes - *meminfo.MemFreeBytes}
	err = memoryStatV2(c.root, m)
	if errors.Is(err, fs.ErrNotExist) {
		m.InactiveFile, m.RSS = deref(meminfo.InactiveFileBytes), deref(meminfo.AnonPagesBytes)
		m.Cache = deref(meminfo.CachedBytes)
	} else if err != nil {
		return out, err
	}
	out.Memory = m
	return out, nil
}

func ptr[T any](v T) *T { return &v }

func deref(v *uint64) uint64 {
	if v == nil {
		return 0
	}
	return *v
}
