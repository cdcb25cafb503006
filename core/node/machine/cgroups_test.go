package machine

import (
	"maps"
	"os"
	"testing"

	"github.com/prometheus/procfs"
)

func cgroupMount(point, fsType string, options ...string) *procfs.MountInfo {
	super := map[string]string{"rw": ""}
	for _, o := range options {
		super[o] = ""
	}
	return &procfs.MountInfo{MountPoint: point, FSType: fsType, SuperOptions: super}
}

func TestCgroupsFromMounts(t *testing.T) {
	hybrid := []*procfs.MountInfo{
		{MountPoint: "/sys/fs/cgroup", FSType: "tmpfs"},
		cgroupMount("/sys/fs/cgroup/cpu,cpuacct", "cgroup", "cpu", "cpuacct"),
		cgroupMount("/sys/fs/cgroup/memory", "cgroup", "memory"),
		cgroupMount("/sys/fs/cgroup/systemd", "cgroup", "name=systemd", "xattr"),
		cgroupMount("/sys/fs/cgroup/unified", "cgroup2", "nsdelegate"),
		// A second mount of a controller (a container's bind mount) does not win.
		cgroupMount("/run/other/memory", "cgroup", "memory"),
	}
	tests := []struct {
		name    string
		mode    CgroupMode
		mounts  []*procfs.MountInfo
		v1      map[string]string
		unified string
		version int
	}{
		{
			name: "hybrid", mode: CgroupHybrid, mounts: hybrid, version: 1, unified: "/sys/fs/cgroup/unified",
			v1: map[string]string{"cpu": "/sys/fs/cgroup/cpu,cpuacct", "cpuacct": "/sys/fs/cgroup/cpu,cpuacct", "memory": "/sys/fs/cgroup/memory"},
		},
		{
			name: "v2", mode: CgroupV2, version: 2, unified: "/sys/fs/cgroup",
			mounts: []*procfs.MountInfo{cgroupMount("/sys/fs/cgroup", "cgroup2", "nsdelegate", "memory_recursiveprot")},
		},
		{
			name: "v1", mode: CgroupV1, version: 1,
			mounts: []*procfs.MountInfo{cgroupMount("/sys/fs/cgroup/pids", "cgroup", "pids")},
			v1:     map[string]string{"pids": "/sys/fs/cgroup/pids"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := cgroupsFromMounts(tt.mode, tt.mounts)
			if err != nil {
				t.Fatal(err)
			}
			if got.Mode != tt.mode || got.Unified != tt.unified || !maps.Equal(got.V1, tt.v1) || got.Version() != tt.version {
				t.Errorf("cgroupsFromMounts = %+v (version %d)", got, got.Version())
			}
		})
	}
	if _, err := cgroupsFromMounts(CgroupV2, hybrid[:4]); err == nil {
		t.Error("v2 mode without a cgroup2 mount was accepted")
	}
	if _, err := cgroupsFromMounts(CgroupV1, hybrid[4:5]); err == nil {
		t.Error("v1 mode without a v1 controller was accepted")
	}
}

// This machine: the mode agrees with what is mounted.
func TestDetectCgroups(t *testing.T) {
	c, err := DetectCgroups()
	if err != nil {
		t.Fatal(err)
	}
	switch c.Mode {
	case CgroupV2:
		if c.Unified == "" || len(c.V1) != 0 {
			t.Errorf("v2: %+v", c)
		}
	case CgroupV1, CgroupHybrid:
		if c.V1["cpu"] == "" || c.V1["memory"] == "" || (c.Mode == CgroupHybrid && c.Unified == "") {
			t.Errorf("%s: %+v", c.Mode, c)
		}
	default:
		t.Errorf("mode %q", c.Mode)
	}
	if c.Mode != CgroupV2 && c.V1["memory"] != "" {
		_, err := os.Stat(c.V1["memory"] + "/memory.memsw.limit_in_bytes")
		if c.SwapAccounting != (err == nil) {
			t.Errorf("SwapAccounting = %v, but memory.memsw.limit_in_bytes: %v", c.SwapAccounting, err)
		}
	}
	t.Logf("cgroups: %+v", c)
}
