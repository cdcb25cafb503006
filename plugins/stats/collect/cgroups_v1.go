package collect

import (
	"path/filepath"
	"time"

	"github.com/microlet/microlet/plugins/stats/summary"
)

// memory.stat keys cgroup v1 counts hierarchically (this cgroup and every
// descendant), as cadvisor reads them.
const (
	v1InactiveFile = "total_inactive_file"
	v1RSS          = "total_rss"
	v1Cache        = "total_cache"
	v1PageFaults   = "total_pgfault"
	v1MajorFaults  = "total_pgmajfault"
	v1Swap         = "total_swap" // only with swap accounting
)

// readV1 reads the cgroup at path in each v1 hierarchy; the memory one
// must hold it.
func (c *Cgroups) readV1(path string, counters bool) (summary.CgroupSample, error) {
	memoryDir := filepath.Join(c.memory, path)
	if err := mustExist(memoryDir); err != nil {
		return summary.CgroupSample{}, err
	}
	out := summary.CgroupSample{Time: time.Now()}
	var err error
	if out.CPUUsageNanos, err = optional(readUint(filepath.Join(c.cpuacct, path, "cpuacct.usage"))); err != nil {
		return out, err
	}
	if counters {
		if out.CFS, out.DiskIO, err = c.cfsAndIO(path, nil); err != nil {
			return out, err
		}
	}
	usage, err := optional(readUint(filepath.Join(memoryDir, "memory.usage_in_bytes")))
	if err != nil || usage == nil {
		return out, err
	}
	limit, err := readUint(filepath.Join(memoryDir, "memory.limit_in_bytes"))
	if err != nil {
		return out, err
	}
	stat, err := readKeyValues(filepath.Join(memoryDir, "memory.stat"), v1InactiveFile, v1RSS, v1Cache, v1PageFaults, v1MajorFaults, v1Swap)
	if err != nil {
		return out, err
	}
	out.Memory = &summary.MemorySample{
		Usage:           *usage,
		InactiveFile:    stat[v1InactiveFile],
		RSS:             stat[v1RSS],
		Cache:           stat[v1Cache],
		PageFaults:      stat[v1PageFaults],
		MajorPageFaults: stat[v1MajorFaults],
		Limit:           &limit,
	}
	if swap, ok := stat[v1Swap]; ok {
		out.SwapUsage = &swap
	}
	return out, nil
}
