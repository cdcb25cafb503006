package machine

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/containerd/cgroups/v3"
	"github.com/containerd/cgroups/v3/cgroup2"
	"github.com/prometheus/procfs"
)

// CgroupMode is how the machine mounts cgroups.
type CgroupMode string

// The cgroup modes.
const (
	// CgroupV1: only v1 controller hierarchies.
	CgroupV1 CgroupMode = "v1"
	// CgroupHybrid: v1 controllers, plus a v2 tree (at
	// /sys/fs/cgroup/unified) that holds no controllers the kubelet uses.
	CgroupHybrid CgroupMode = "hybrid"
	// CgroupV2: the unified v2 tree at /sys/fs/cgroup.
	CgroupV2 CgroupMode = "v2"
)

// Cgroups is the machine's cgroup setup.
type Cgroups struct {
	Mode CgroupMode
	// V1 are the mount points of the v1 controllers by controller name
	// ("cpu": "/sys/fs/cgroup/cpu"); named hierarchies (name=systemd) are
	// left out. Empty in v2 mode.
	V1 map[string]string
	// Unified is the mount point of the v2 tree; "" when none is mounted.
	Unified string
	// SwapAccounting says the memory controller limits swap
	// (memory.memsw.limit_in_bytes in v1, memory.swap.max in v2), which
	// the kubelet's NoSwap behaviour relies on.
	SwapAccounting bool
}

// Version is the cgroup version pods are managed in: 2 in v2 mode, 1 in v1
// and hybrid modes, as runc and the kubelet decide.
func (c *Cgroups) Version() int {
	if c.Mode == CgroupV2 {
		return 2
	}
	return 1
}

// DetectCgroups reads the cgroup mode (containerd's cgroups.Mode: statfs of
// /sys/fs/cgroup and /sys/fs/cgroup/unified) and the mount points of this
// process's mount namespace.
func DetectCgroups() (*Cgroups, error) {
	var mode CgroupMode
	switch cgroups.Mode() {
	case cgroups.Legacy:
		mode = CgroupV1
	case cgroups.Hybrid:
		mode = CgroupHybrid
	case cgroups.Unified:
		mode = CgroupV2
	default:
		return nil, errors.New("no cgroup filesystem is mounted at /sys/fs/cgroup")
	}
	mounts, err := procfs.GetMounts()
	if err != nil {
		return nil, fmt.Errorf("read mounts: %w", err)
	}
	c, err := cgroupsFromMounts(mode, mounts)
	if err != nil {
		return nil, err
	}
	c.SwapAccounting = swapAccounting(c)
	return c, nil
}

// swapAccounting looks for the swap limit file where the kubelet does
// (checkSwapControllerAvailability): at the v1 memory root, or in this
// process's own v2 cgroup, since the v2 root has no memory.swap.max.
func swapAccounting(c *Cgroups) bool {
	file := filepath.Join(c.V1["memory"], "memory.memsw.limit_in_bytes")
	if c.Mode == CgroupV2 {
		self, err := cgroup2.PidGroupPath(os.Getpid())
		if err != nil {
			return false
		}
		file = filepath.Join(c.Unified, self, "memory.swap.max")
	}
	_, err := os.Stat(file)
	return err == nil
}

// cgroupsFromMounts finds the cgroup mount points among mounts. The first
// mount of a controller wins, as in the kernel's view of /proc/self/cgroup.
func cgroupsFromMounts(mode CgroupMode, mounts []*procfs.MountInfo) (*Cgroups, error) {
	c := &Cgroups{Mode: mode, V1: map[string]string{}}
	for _, m := range mounts {
		switch m.FSType {
		case "cgroup2":
			if c.Unified == "" {
				c.Unified = m.MountPoint
			}
		case "cgroup":
			for option := range m.SuperOptions {
				if isV1Controller(option) {
					if _, seen := c.V1[option]; !seen {
						c.V1[option] = m.MountPoint
					}
				}
			}
		}
	}
	switch {
	case mode == CgroupV2 && c.Unified == "":
		return nil, errors.New("cgroup v2 mode, but no cgroup2 filesystem is mounted")
	case mode == CgroupV2:
		c.V1 = nil
	case len(c.V1) == 0:
		return nil, fmt.Errorf("cgroup %s mode, but no cgroup v1 controller is mounted", mode)
	}
	return c, nil
}

// isV1Controller tells the controllers of a v1 mount's super options from
// mount flags and named hierarchies.
func isV1Controller(option string) bool {
	switch option {
	case "cpu", "cpuacct", "cpuset", "memory", "pids", "hugetlb", "devices", "freezer", "blkio",
		"net_cls", "net_prio", "perf_event", "rdma", "misc":
		return true
	}
	return false
}
