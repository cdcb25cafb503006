package cgroup

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/containerd/cgroups/v3/cgroup1"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
)

// v1Controllers are the v1 controllers pod cgroups are made in (upstream's
// allowlist in cgroup_v1_manager_linux.go); cpu and memory are required,
// the others are used when mounted.
var v1Controllers = []cgroup1.Name{cgroup1.Cpu, cgroup1.Cpuacct, cgroup1.Cpuset, cgroup1.Memory, cgroup1.Pids, cgroup1.Hugetlb}

// v1Tree manages cgroups in the v1 controller hierarchies.
type v1Tree struct {
	subsystems []cgroup1.Subsystem
}

// pather is what every v1 controller of the library is besides a Subsystem.
type pather interface{ Path(path string) string }

func newV1Tree(mounts map[string]string) (*v1Tree, error) {
	t := &v1Tree{}
	for _, name := range v1Controllers {
		mount, ok := mounts[string(name)]
		if !ok {
			if name == cgroup1.Cpu || name == cgroup1.Memory {
				return nil, fmt.Errorf("the cgroup v1 %s controller is not mounted", name)
			}
			continue
		}
		// The library finds a controller at <parent of the mounts>/<name>;
		// comounted controllers ("cpu,cpuacct") are found through the
		// usual symlinks.
		root := filepath.Dir(mount)
		if !sameDir(filepath.Join(root, string(name)), mount) {
			return nil, fmt.Errorf("the cgroup v1 %s controller is mounted at %s, but %s does not lead there; link it so, as systemd does",
				name, mount, filepath.Join(root, string(name)))
		}
		s, err := v1Subsystem(name, root)
		if errors.Is(err, os.ErrNotExist) {
			continue // no huge pages in this kernel
		}
		if err != nil {
			return nil, fmt.Errorf("cgroup v1 %s controller: %w", name, err)
		}
		t.subsystems = append(t.subsystems, s)
	}
	return t, nil
}

func v1Subsystem(name cgroup1.Name, root string) (cgroup1.Subsystem, error) {
	switch name {
	case cgroup1.Cpu:
		return cgroup1.NewCpu(root), nil
	case cgroup1.Cpuacct:
		return cgroup1.NewCpuacct(root), nil
	case cgroup1.Cpuset:
		return cgroup1.NewCpuset(root), nil
	case cgroup1.Memory:
		return cgroup1.NewMemory(root), nil
	case cgroup1.Pids:
		return cgroup1.NewPids(root), nil
	case cgroup1.Hugetlb:
		return cgroup1.NewHugetlb(root)
	}
	return nil, fmt.Errorf("controller %s is not used", name)
}

func (t *v1Tree) hierarchy() ([]cgroup1.Subsystem, error) { return t.subsystems, nil }

// apply creates the cgroup in every hierarchy (the library's New creates
// and writes; on an existing cgroup it writes) with the settings that are
// set.
func (t *v1Tree) apply(path string, s *cgroupv1.CgroupSettings) error {
	_, err := cgroup1.New(cgroup1.StaticPath(path), linuxResources(s), cgroup1.WithHierarchy(t.hierarchy))
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", path, err)
	}
	return nil
}

func (t *v1Tree) exists(path string) bool {
	for _, s := range t.subsystems {
		if info, err := os.Stat(s.(pather).Path(path)); err != nil || !info.IsDir() {
			return false
		}
	}
	return true
}

func (t *v1Tree) remove(path string) error {
	cg, err := cgroup1.Load(cgroup1.StaticPath(path), cgroup1.WithHierarchy(t.hierarchy))
	if errors.Is(err, cgroup1.ErrCgroupDeleted) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("cgroup %s: %w", path, err)
	}
	for _, s := range cg.Subsystems() {
		procs, err := cg.Processes(s.Name(), true)
		if errors.Is(err, os.ErrNotExist) {
			continue
		}
		if err != nil {
			return fmt.Errorf("cgroup %s: %w", path, err)
		}
		if len(procs) > 0 {
			return fmt.Errorf("cgroup %s: %w (%d in %s, e.g. pid %d)", path, errBusy, len(procs), s.Name(), procs[0].Pid)
		}
	}
	if err := cg.Delete(); err != nil {
		return fmt.Errorf("cgroup %s: %w", path, err)
	}
	return nil
}

// linuxResources are settings as the v1 library takes them. Unset
// settings stay nil, so nothing is written for them.
func linuxResources(s *cgroupv1.CgroupSettings) *specs.LinuxResources {
	r := &specs.LinuxResources{}
	if s == nil {
		return r
	}
	if s.CpuShares != nil || s.CpuQuota != nil || s.CpuPeriod != nil || s.CpusetCpus != "" || s.CpusetMems != "" {
		r.CPU = &specs.LinuxCPU{Shares: s.CpuShares, Quota: s.CpuQuota, Period: s.CpuPeriod, Cpus: s.CpusetCpus, Mems: s.CpusetMems}
	}
	if s.MemoryLimitBytes != nil {
		r.Memory = &specs.LinuxMemory{Limit: s.MemoryLimitBytes}
	}
	if s.PidsLimit != nil {
		r.Pids = &specs.LinuxPids{Limit: s.PidsLimit}
	}
	for _, l := range hugePageLimitsByUnit(s.HugepageLimits) {
		r.HugepageLimits = append(r.HugepageLimits, specs.LinuxHugepageLimit{Pagesize: l.unit, Limit: l.bytes})
	}
	return r
}

// sameDir reports whether two paths lead to the same directory.
func sameDir(a, b string) bool {
	ia, errA := os.Stat(a)
	ib, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(ia, ib)
}
