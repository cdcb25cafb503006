package cgroup

import (
	"errors"
	"fmt"
	"slices"

	"k8s.io/apimachinery/pkg/api/resource"

	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
)

// Bounds of cgroup values the kernel takes.
const (
	minShares      = 2
	maxShares      = 262144
	minCFSQuota    = 1000    // 1ms
	minCFSPeriod   = 1000    // 1ms
	maxCFSPeriod   = 1000000 // 1s
	maxCPUWeight   = 10000
	unlimitedValue = -1
)

// checkSettings refuses settings the kernel would refuse or misread, naming
// the field and what was expected: a plugin's plan is input, not trusted.
func checkSettings(s *cgroupv1.CgroupSettings) error {
	if s == nil {
		return nil
	}
	var errs []error
	bad := func(field string, got any, want string) {
		errs = append(errs, fmt.Errorf("%s is %v, expected %s", field, got, want))
	}
	if s.CpuShares != nil && (*s.CpuShares < minShares || *s.CpuShares > maxShares) {
		bad("cpu_shares", *s.CpuShares, fmt.Sprintf("%d to %d", minShares, maxShares))
	}
	if s.CpuQuota != nil && *s.CpuQuota != unlimitedValue && *s.CpuQuota < minCFSQuota {
		bad("cpu_quota", *s.CpuQuota, fmt.Sprintf("-1 (no limit) or at least %d microseconds", minCFSQuota))
	}
	if s.CpuPeriod != nil && (*s.CpuPeriod < minCFSPeriod || *s.CpuPeriod > maxCFSPeriod) {
		bad("cpu_period", *s.CpuPeriod, fmt.Sprintf("%d to %d microseconds", minCFSPeriod, maxCFSPeriod))
	}
	if s.MemoryLimitBytes != nil && *s.MemoryLimitBytes != unlimitedValue && *s.MemoryLimitBytes <= 0 {
		bad("memory_limit_bytes", *s.MemoryLimitBytes, "-1 (no limit) or a positive number of bytes")
	}
	if s.PidsLimit != nil && *s.PidsLimit != unlimitedValue && *s.PidsLimit <= 0 {
		bad("pids_limit", *s.PidsLimit, "-1 (no limit) or a positive count")
	}
	for _, size := range sortedKeys(s.HugepageLimits) {
		if _, err := hugePageUnit(size); err != nil {
			errs = append(errs, fmt.Errorf("hugepage_limits: %w", err))
		}
		if s.HugepageLimits[size] < 0 {
			bad(fmt.Sprintf("hugepage_limits[%q]", size), s.HugepageLimits[size], "a limit of 0 or more bytes")
		}
	}
	return errors.Join(errs...)
}

// hugeSizeUnits are the units of huge page sizes as cgroup files and CRI
// name them (upstream v1helper.HugePageUnitSizeFromByteSize).
var hugeSizeUnits = []string{"B", "KB", "MB", "GB", "TB", "PB"}

// hugePageUnit turns a page size written as a Kubernetes quantity ("2Mi",
// as CgroupSettings.hugepage_limits keys it) into the form of hugetlb files
// and CRI ("2MB").
func hugePageUnit(size string) (string, error) {
	q, err := resource.ParseQuantity(size)
	if err != nil {
		return "", fmt.Errorf("page size %q: %w", size, err)
	}
	bytes := q.Value()
	if bytes <= 0 {
		return "", fmt.Errorf("page size %q is not positive", size)
	}
	unit := 0
	for bytes%1024 == 0 && unit < len(hugeSizeUnits)-1 {
		bytes /= 1024
		unit++
	}
	if bytes > 1024 {
		return "", fmt.Errorf("page size %q is not a whole number of %s", size, hugeSizeUnits[unit])
	}
	return fmt.Sprintf("%d%s", bytes, hugeSizeUnits[unit]), nil
}

// hugePageLimitsByUnit keys a settings' huge page limits by page unit
// ("2MB"), in order; checkSettings has accepted them.
func hugePageLimitsByUnit(limits map[string]int64) []hugePageLimit {
	out := make([]hugePageLimit, 0, len(limits))
	for _, size := range sortedKeys(limits) {
		unit, err := hugePageUnit(size)
		if err != nil {
			continue
		}
		out = append(out, hugePageLimit{unit: unit, bytes: uint64(limits[size])})
	}
	return out
}

type hugePageLimit struct {
	unit  string
	bytes uint64
}

// cpuWeight converts cpu.shares to cgroup v2 cpu.weight the way the kubelet
// does (pkg/kubelet/cm getCPUWeight): linearly from [2, 262144] to
// [1, 10000].
func cpuWeight(shares uint64) uint64 {
	if shares >= maxShares {
		return maxCPUWeight
	}
	return 1 + ((shares-minShares)*(maxCPUWeight-1))/(maxShares-minShares)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
