package machine

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"
)

// fixture writes files under root: path -> content.
func fixture(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for path, content := range files {
		full := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestReadCapacity(t *testing.T) {
	proc, sys, rootDir := t.TempDir(), t.TempDir(), t.TempDir()
	fixture(t, proc, map[string]string{
		"meminfo":                "MemTotal:        8048576 kB\nMemFree:         1000000 kB\n",
		"sys/kernel/pid_max":     "4194304\n",
		"sys/kernel/threads-max": "62861\n",
	})
	fixture(t, sys, map[string]string{
		"devices/system/cpu/cpu1/online":                       "1\n",
		"devices/system/cpu/cpu2/online":                       "0\n",
		"devices/system/cpu/cpu3/online":                       "1\n",
		"kernel/mm/hugepages/hugepages-2048kB/nr_hugepages":    "4\n",
		"kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages": "0\n",
	})
	// cpu0 has no online file: it cannot be taken offline.
	if err := os.MkdirAll(filepath.Join(sys, "devices/system/cpu/cpu0"), 0o755); err != nil {
		t.Fatal(err)
	}
	var st unix.Statfs_t
	if err := unix.Statfs(rootDir, &st); err != nil {
		t.Fatal(err)
	}

	c, err := ReadCapacity(Options{RootDir: rootDir, MaxPods: 110, ProcFS: proc, SysFS: sys})
	if err != nil {
		t.Fatal(err)
	}
	want := Capacity{
		CPUMillis: 3000, MemoryBytes: 8048576 * 1024, EphemeralStorageBytes: int64(st.Frsize) * int64(st.Blocks),
		HugePages: map[v1.ResourceName]int64{"hugepages-2Mi": 8 << 20, "hugepages-1Gi": 0}, Pods: 110, PIDs: 62861,
	}
	if c.CPUMillis != want.CPUMillis || c.MemoryBytes != want.MemoryBytes || c.EphemeralStorageBytes != want.EphemeralStorageBytes ||
		c.Pods != want.Pods || c.PIDs != want.PIDs || len(c.HugePages) != 2 ||
		c.HugePages["hugepages-2Mi"] != want.HugePages["hugepages-2Mi"] || c.HugePages["hugepages-1Gi"] != 0 {
		t.Errorf("ReadCapacity = %+v\nwant %+v", c, want)
	}

	status := c.Resources()
	for name, wantQ := range map[v1.ResourceName]string{
		"cpu": "3", "memory": "8048576Ki", "pods": "110", "hugepages-2Mi": "8Mi", "hugepages-1Gi": "0",
	} {
		if got := status[name]; got.String() != wantQ {
			t.Errorf("Resources()[%s] = %s, want %s", name, got.String(), wantQ)
		}
	}
	if _, ok := status["pid"]; ok {
		t.Error("node status must not show the internal pid resource")
	}
	if len(status) != 6 {
		t.Errorf("Resources() = %v, want cpu, memory, ephemeral-storage, pods and two huge page pools", status)
	}

	list := c.ResourceList()
	if list.GetCpuMillis() != 3000 || list.GetPids() != 62861 || list.GetOther()["pods"] != 110 || list.GetOther()["hugepages-2Mi"] != 8<<20 {
		t.Errorf("ResourceList() = %v", list)
	}
}

func TestReadCapacityErrors(t *testing.T) {
	proc, sys := t.TempDir(), t.TempDir()
	fixture(t, proc, map[string]string{"meminfo": "MemFree: 1 kB\n", "sys/kernel/pid_max": "100\n", "sys/kernel/threads-max": "100\n"})
	fixture(t, sys, map[string]string{"devices/system/cpu/cpu0/online": "1\n"})
	for name, opts := range map[string]Options{
		"max_pods 0":             {RootDir: t.TempDir(), ProcFS: proc, SysFS: sys},
		"no MemTotal":            {RootDir: t.TempDir(), MaxPods: 1, ProcFS: proc, SysFS: sys},
		"root dir missing":       {RootDir: filepath.Join(t.TempDir(), "missing"), MaxPods: 1, ProcFS: proc, SysFS: sys},
		"no CPUs in this sysfs":  {RootDir: t.TempDir(), MaxPods: 1, ProcFS: proc, SysFS: t.TempDir()},
		"procfs mount not found": {RootDir: t.TempDir(), MaxPods: 1, ProcFS: filepath.Join(proc, "missing"), SysFS: sys},
	} {
		t.Run(name, func(t *testing.T) {
			if c, err := ReadCapacity(opts); err == nil {
				t.Errorf("ReadCapacity = %+v, want an error", c)
			}
		})
	}
}

// The real machine: every value is read and plausible.
func TestReadCapacityOfThisMachine(t *testing.T) {
	c, err := ReadCapacity(Options{RootDir: t.TempDir(), MaxPods: 110})
	if err != nil {
		t.Fatal(err)
	}
	pidMax, err := readInt("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	if c.CPUMillis < 1000 || c.CPUMillis%1000 != 0 || c.MemoryBytes <= 0 || c.EphemeralStorageBytes <= 0 || c.PIDs <= 0 || c.PIDs > pidMax {
		t.Errorf("ReadCapacity = %+v", c)
	}
}
