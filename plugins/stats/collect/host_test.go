package collect

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/microlet/microlet/internal/prereq"
)

// The real node's /proc and cgroup tree: the readers must understand what
// the kernel writes, not just what the fake trees hold.

func TestHostProc(t *testing.T) {
	p, err := OpenProc("/proc")
	if err != nil {
		t.Fatal(err)
	}
	mem, err := p.Meminfo()
	if err != nil || mem.MemTotalBytes == nil || *mem.MemTotalBytes == 0 {
		t.Fatalf("Meminfo: %v", err)
	}
	if boot, err := p.BootTime(); err != nil || boot.After(time.Now()) || boot.Before(time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)) {
		t.Errorf("BootTime = %v, %v", boot, err)
	}
	if usage, err := p.CPUUsageNanos(); err != nil || usage == 0 {
		t.Errorf("CPUUsageNanos = %d, %v", usage, err)
	}
	r := p.Rlimit()
	if r.MaxPID == nil || *r.MaxPID <= 0 || r.Tasks == nil || *r.Tasks <= 0 {
		t.Errorf("Rlimit = %+v", r)
	}
	if _, err := p.Network(); err != nil {
		t.Errorf("Network: %v", err)
	}
	if net, err := p.ProcessNetwork(os.Getpid()); err != nil || net.Default != "eth0" {
		t.Errorf("ProcessNetwork(self) = %+v, %v", net, err)
	}
}

func TestHostCgroupRoot(t *testing.T) {
	c, err := OpenCgroups("/sys/fs/cgroup")
	if err != nil {
		prereq.Missing(t, "no cgroup tree here: %v", err)
	}
	p, _ := OpenProc("/proc")
	mem, _ := p.Meminfo()
	root, err := c.ReadRoot(mem, true)
	if err != nil {
		t.Fatal(err)
	}
	if root.Memory == nil || root.Memory.Usage == 0 || root.Memory.Usage < root.Memory.InactiveFile {
		t.Errorf("root memory = %+v", root.Memory)
	}
	if c.Version() == 1 && (root.CPUUsageNanos == nil || *root.CPUUsageNanos == 0) {
		t.Errorf("v1 root has no cpu usage")
	}
}

// TestHostCgroupV1 makes a cgroup of its own on a v1 host, puts a process
// in it, and reads it back.
func TestHostCgroupV1(t *testing.T) {
	prereq.Root(t, "it makes cgroups")
	c, err := OpenCgroups("/sys/fs/cgroup")
	if err != nil {
		prereq.Missing(t, "no cgroup tree here: %v", err)
	}
	if c.Version() != 1 {
		// The machine's cgroup mode is no prerequisite one can install.
		t.Skip("not a cgroup v1 host")
	}
	path := fmt.Sprintf("/microlet-stats-test-%d/pod", os.Getpid())
	var dirs []string
	hierarchies := []string{c.memory, c.cpuacct}
	if c.cpu != "" && c.cpu != c.cpuacct {
		hierarchies = append(hierarchies, c.cpu)
	}
	for _, h := range hierarchies {
		dir := filepath.Join(h, path)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		dirs = append(dirs, dir, filepath.Dir(dir))
	}
	t.Cleanup(func() {
		for _, d := range dirs {
			if err := os.Remove(d); err != nil && !os.IsNotExist(err) {
				t.Errorf("remove cgroup %s: %v", d, err)
			}
		}
	})
	if err := os.WriteFile(filepath.Join(c.memory, path, "memory.limit_in_bytes"), []byte("67108864"), 0o644); err != nil {
		t.Fatal(err)
	}

	cmd := exec.Command("sleep", "600")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Registered after the cgroup cleanup, so it runs first: the cgroup
	// must be empty before it can be removed.
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	if c.cpu != "" {
		// A CFS quota: cAdvisor's CFS counters are read only with one.
		if err := os.WriteFile(filepath.Join(c.cpu, path, "cpu.cfs_quota_us"), []byte("50000"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, h := range hierarchies {
		if err := os.WriteFile(filepath.Join(h, path, "cgroup.procs"), []byte(strconv.Itoa(cmd.Process.Pid)), 0o644); err != nil {
			t.Fatal(err)
		}
	}

	got, err := c.Read(path, true)
	if err != nil {
		t.Fatal(err)
	}
	if got.CPUUsageNanos == nil || got.Memory == nil || got.Memory.Limit == nil || *got.Memory.Limit != 64<<20 {
		t.Fatalf("Read = %s", describe(got))
	}
	if c.cpu != "" && got.CFS == nil {
		t.Errorf("Read of a cgroup with a CFS quota has no CFS periods: %s", describe(got))
	}
	if counters, err := c.Counters(path); err != nil || counters.Cache == nil || (c.cpu != "" && counters.CFS == nil) {
		t.Errorf("Counters = %+v, %v; want the page cache and, with a quota, CFS periods", counters, err)
	}
	if n, err := c.Processes(path); err != nil || n != 1 {
		t.Errorf("Processes = %d, %v; want the one sleep", n, err)
	}
	if created, err := c.Created(path); err != nil || time.Since(created) > time.Hour {
		t.Errorf("Created = %v, %v; want about now", created, err)
	}
}
