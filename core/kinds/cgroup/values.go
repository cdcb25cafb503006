package cgroup

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/microlet/microlet/core/node/machine"
)

// CgroupValues are the resource settings one cgroup holds, as the kernel
// shows them. Limits read "no limit" as -1.
type CgroupValues struct {
	// CPUShares is cpu.shares (v1); 0 in v2.
	CPUShares uint64
	// CPUWeight is cpu.weight (v2); 0 in v1.
	CPUWeight uint64
	// CPUQuota is the CFS quota in microseconds per CPUPeriod.
	CPUQuota  int64
	CPUPeriod uint64
	// MemoryLimit is memory.limit_in_bytes (v1) or memory.max (v2).
	MemoryLimit int64
	// PidsLimit is pids.max; 0 when the pids controller is not there.
	PidsLimit int64
	// HugePageLimits are the hugetlb limits by page size ("2MB"); nil when
	// the hugetlb controller is not there.
	HugePageLimits map[string]int64
}

// v1UnlimitedMemory: cgroup v1 shows "no limit" as the largest page-aligned
// int64; no real limit comes near.
const v1UnlimitedMemory = 1 << 62

// ReadCgroup reads the settings of the cgroup at path (absolute, the cgroup
// root included, as PodCgroup returns it) from the machine's hierarchies:
// the unified tree in v2 mode, the v1 controllers otherwise. The node e2e
// tests check running pods with it.
func ReadCgroup(cg *machine.Cgroups, path string) (*CgroupValues, error) {
	if cg.Version() == 2 {
		return readV2(filepath.Join(cg.Unified, path))
	}
	return readV1(cg.V1, path)
}

func readV1(mounts map[string]string, path string) (*CgroupValues, error) {
	cpu, memory := filepath.Join(mounts["cpu"], path), filepath.Join(mounts["memory"], path)
	v := &CgroupValues{}
	var err error
	if v.CPUShares, err = readUint(cpu, "cpu.shares"); err != nil {
		return nil, err
	}
	if v.CPUQuota, err = readInt(cpu, "cpu.cfs_quota_us"); err != nil {
		return nil, err
	}
	if v.CPUPeriod, err = readUint(cpu, "cpu.cfs_period_us"); err != nil {
		return nil, err
	}
	if v.MemoryLimit, err = readInt(memory, "memory.limit_in_bytes"); err != nil {
		return nil, err
	}
	if v.MemoryLimit >= v1UnlimitedMemory {
		v.MemoryLimit = -1
	}
	if mount, ok := mounts["pids"]; ok {
		if v.PidsLimit, err = readInt(filepath.Join(mount, path), "pids.max"); err != nil {
			return nil, err
		}
	}
	if mount, ok := mounts["hugetlb"]; ok {
		if v.HugePageLimits, err = readHugePages(filepath.Join(mount, path), ".limit_in_bytes"); err != nil {
			return nil, err
		}
	}
	return v, nil
}

func readV2(dir string) (*CgroupValues, error) {
	v := &CgroupValues{}
	var err error
	if v.CPUWeight, err = readUint(dir, "cpu.weight"); err != nil {
		return nil, err
	}
	cpuMax, err := readString(dir, "cpu.max")
	if err != nil {
		return nil, err
	}
	quota, period, ok := strings.Cut(cpuMax, " ")
	if !ok {
		return nil, fmt.Errorf("%s/cpu.max: %q is not \"<quota> <period>\"", dir, cpuMax)
	}
	if v.CPUQuota, err = parseLimit(quota); err != nil {
		return nil, fmt.Errorf("%s/cpu.max: %w", dir, err)
	}
	if v.CPUPeriod, err = strconv.ParseUint(period, 10, 64); err != nil {
		return nil, fmt.Errorf("%s/cpu.max: %w", dir, err)
	}
	if v.MemoryLimit, err = readInt(dir, "memory.max"); err != nil {
		return nil, err
	}
	if v.MemoryLimit == math.MaxInt64 {
		v.MemoryLimit = -1
	}
	if v.PidsLimit, err = readInt(dir, "pids.max"); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	if v.HugePageLimits, err = readHugePages(dir, ".max"); err != nil {
		return nil, err
	}
	return v, nil
}

// readHugePages reads hugetlb.<size><suffix> files; nil when there are none.
func readHugePages(dir, suffix string) (map[string]int64, error) {
	files, err := filepath.Glob(filepath.Join(dir, "hugetlb.*"+suffix))
	if err != nil || len(files) == 0 {
		return nil, err
	}
	limits := map[string]int64{}
	for _, f := range files {
		size := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(f), "hugetlb."), suffix)
		if strings.Contains(size, ".") {
			continue // hugetlb.2MB.rsvd.max and the like
		}
		if limits[size], err = readInt(dir, filepath.Base(f)); err != nil {
			return nil, err
		}
	}
	return limits, nil
}

func readString(dir, file string) (string, error) {
	b, err := os.ReadFile(filepath.Join(dir, file))
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(b)), nil
}

// readInt reads a number, or "max" as -1.
func readInt(dir, file string) (int64, error) {
	s, err := readString(dir, file)
	if err != nil {
		return 0, err
	}
	v, err := parseLimit(s)
	if err != nil {
		return 0, fmt.Errorf("%s/%s: %w", dir, file, err)
	}
	return v, nil
}

func readUint(dir, file string) (uint64, error) {
	s, err := readString(dir, file)
	if err != nil {
		return 0, err
	}
	v, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s/%s: %w", dir, file, err)
	}
	return v, nil
}

func parseLimit(s string) (int64, error) {
	if s == "max" {
		return -1, nil
	}
	return strconv.ParseInt(s, 10, 64)
}
