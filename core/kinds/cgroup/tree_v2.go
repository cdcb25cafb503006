package cgroup

import (
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/containerd/cgroups/v3/cgroup2"

	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
)

// v2Controllers are the controllers pod cgroups use in the unified tree
// (upstream getSupportedUnifiedControllers, cpuset aside: it is enabled
// only for settings that set CPUs or memory nodes); cpu and memory are
// required.
var v2Controllers = []string{"cpu", "memory", "pids", "hugetlb"}

// v2Tree manages cgroups in the unified tree mounted at mountpoint.
type v2Tree struct {
	mountpoint string
	// offered are the controllers of v2Controllers the root offers.
	offered []string
}

func newV2Tree(mountpoint string) (*v2Tree, error) {
	b, err := os.ReadFile(filepath.Join(mountpoint, "cgroup.controllers"))
	if err != nil {
		return nil, fmt.Errorf("cgroup v2 controllers: %w", err)
	}
	available := strings.Fields(string(b))
	t := &v2Tree{mountpoint: mountpoint}
	for _, c := range v2Controllers {
		switch {
		case slices.Contains(available, c):
			t.offered = append(t.offered, c)
		case c == "cpu" || c == "memory":
			return nil, fmt.Errorf("the cgroup v2 root %s does not offer the %s controller (it offers %q)", mountpoint, c, available)
		}
	}
	return t, nil
}

// apply creates the cgroup, enables the controllers in its parents'
// cgroup.subtree_control, and writes the settings that are set (the
// library's NewManager).
func (t *v2Tree) apply(path string, s *cgroupv1.CgroupSettings) error {
	if _, err := cgroup2.NewManager(t.mountpoint, path, t.resources(s)); err != nil {
		return fmt.Errorf("cgroup %s: %w", path, err)
	}
	return nil
}

func (t *v2Tree) exists(path string) bool {
	info, err := os.Stat(filepath.Join(t.mountpoint, path))
	return err == nil && info.IsDir()
}

func (t *v2Tree) remove(path string) error {
	if !t.exists(path) {
		return nil
	}
	m, err := cgroup2.Load(path, cgroup2.WithMountpoint(t.mountpoint))
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", path, err)
	}
	procs, err := m.Procs(true)
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("cgroup %s: %w", path, err)
	}
	if len(procs) > 0 {
		return fmt.Errorf("cgroup %s: %w (%d, e.g. pid %d)", path, errBusy, len(procs), procs[0])
	}
	if err := m.Delete(); err != nil {
		return fmt.Errorf("cgroup %s: %w", path, err)
	}
	return nil
}

// resources are settings as the v2 library takes them. Every offered
// controller gets a section, so that it is enabled for the cgroup, as the
// kubelet's libcontainer does; only set values are written: cpu.weight
// from shares as the kubelet converts them, cpu.max, memory.max,
// pids.max and hugetlb.<size>.max.
func (t *v2Tree) resources(s *cgroupv1.CgroupSettings) *cgroup2.Resources {
	r := &cgroup2.Resources{CPU: &cgroup2.CPU{}, Memory: &cgroup2.Memory{}}
	if slices.Contains(t.offered, "pids") {
		r.Pids = &cgroup2.Pids{}
	}
	if slices.Contains(t.offered, "hugetlb") {
		r.HugeTlb = &cgroup2.HugeTlb{}
	}
	if s == nil {
		return r
	}
	if s.CpuShares != nil {
		w := cpuWeight(*s.CpuShares)
		r.CPU.Weight = &w
	}
	if s.CpuQuota != nil || s.CpuPeriod != nil {
		quota := s.CpuQuota
		if quota != nil && *quota == unlimitedValue {
			quota = nil // "max"
		}
		r.CPU.Max = cgroup2.NewCPUMax(quota, s.CpuPeriod)
	}
	r.CPU.Cpus, r.CPU.Mems = s.CpusetCpus, s.CpusetMems
	if s.MemoryLimitBytes != nil {
		limit := *s.MemoryLimitBytes
		if limit == unlimitedValue {
			// memory.max takes "max" or bytes; the largest number of bytes
			// reads back as "max".
			limit = math.MaxInt64
		}
		r.Memory.Max = &limit
	}
	if r.Pids != nil && s.PidsLimit != nil {
		r.Pids.Max = *s.PidsLimit // -1 writes "max"
	}
	if r.HugeTlb != nil {
		for _, l := range hugePageLimitsByUnit(s.HugepageLimits) {
			*r.HugeTlb = append(*r.HugeTlb, cgroup2.HugeTlbEntry{HugePageSize: l.unit, Limit: l.bytes})
		}
	}
	return r
}
