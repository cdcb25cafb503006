package cgroup

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/node/machine"
	"github.com/microlet/microlet/plugins/cgroup/planner"
)

// The node's and a pod's cgroups on this machine's real cgroup v1
// controllers, under a private cgroup root.
func TestCgroupsOnRealV1(t *testing.T) {
	cg, root := privateV1Root(t)
	plugin := servePlanner(t, map[string]any{
		"kube_reserved":  map[string]any{"cpu": "500m", "memory": "1Gi", "pid": "1000"},
		"pod_pids_limit": 512,
	})
	m, err := New(Options{Plugin: plugin, Capacity: testCapacity(), Cgroups: cg, CgroupRoot: root, Logger: testLogger(t, &logBuffer{})})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	burstable := testPod("b1", [2]string{"cpu=250m,memory=256Mi", "cpu=500m,memory=512Mi"}, [2]string{"cpu=250m", ""})
	if err := m.UpdatePods(ctx, []*v1.Pod{burstable, guaranteed("g1", "500m", "1Gi")}); err != nil {
		t.Fatal(err)
	}

	kubepods := readCgroup(t, cg, root+"/kubepods")
	// "pods" enforced: capacity less kube_reserved.
	if kubepods.CPUShares != 1536 || kubepods.MemoryLimit != 3*Gi || kubepods.PidsLimit != 9000 {
		t.Errorf("kubepods = %+v", kubepods)
	}
	if got := readCgroup(t, cg, root+"/kubepods/burstable"); got.CPUShares != 512 {
		t.Errorf("burstable cpu.shares = %d, want 512 (500m of Burstable requests)", got.CPUShares)
	}
	if got := readCgroup(t, cg, root+"/kubepods/besteffort"); got.CPUShares != 2 {
		t.Errorf("besteffort cpu.shares = %d, want 2", got.CPUShares)
	}

	pod := guaranteed("g1", "500m", "1Gi")
	plan, err := m.PlanPod(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	cgroup := root + "/kubepods/podg1"
	if plan.CgroupParent != cgroup {
		t.Errorf("CgroupParent = %q, want %q", plan.CgroupParent, cgroup)
	}
	got := readCgroup(t, cg, cgroup)
	if got.CPUShares != 512 || got.CPUQuota != 50000 || got.CPUPeriod != 100000 || got.MemoryLimit != Gi || got.PidsLimit != 512 {
		t.Errorf("pod cgroup = %+v", got)
	}
	// The raw files, as the runtime and the kernel see them.
	if s := readFile(t, filepath.Join(cg.V1["memory"], cgroup, "memory.limit_in_bytes")); s != strconv.FormatInt(Gi, 10) {
		t.Errorf("memory.limit_in_bytes = %s", s)
	}
	for _, controller := range []string{"cpuacct", "cpuset"} {
		if mount, ok := cg.V1[controller]; ok {
			if _, err := os.Stat(filepath.Join(mount, cgroup)); err != nil {
				t.Errorf("the pod cgroup is missing from the %s hierarchy: %v", controller, err)
			}
		}
	}
	if cpus := readFile(t, filepath.Join(cg.V1["cpuset"], cgroup, "cpuset.cpus")); cpus == "" {
		t.Error("the pod's cpuset.cpus is empty: no process could run in it")
	}
	c := plan.Containers["c0"]
	if c.GetCpuShares() != 512 || c.GetCpuQuota() != 50000 || c.GetCpuPeriod() != 100000 || c.GetMemoryLimitInBytes() != Gi ||
		c.GetOomScoreAdj() != -997 || c.GetUnified() != nil {
		t.Errorf("container resources = %v", c)
	}
	if wantSwap := map[bool]int64{true: Gi, false: 0}[cg.SwapAccounting]; c.GetMemorySwapLimitInBytes() != wantSwap {
		t.Errorf("memory swap limit = %d, want %d (NoSwap with swap accounting %v)", c.GetMemorySwapLimitInBytes(), wantSwap, cg.SwapAccounting)
	}
	if cgroupPath, qos, ok := m.PodCgroup(pod.UID); !ok || cgroupPath != cgroup || qos != planner.Guaranteed {
		t.Errorf("PodCgroup = %q %q %v", cgroupPath, qos, ok)
	}

	// A process left in the pod cgroup keeps it until it is gone.
	sleeper := exec.Command("sleep", "300")
	if err := sleeper.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = sleeper.Process.Kill()
		_ = sleeper.Wait()
	})
	for _, controller := range []string{"cpu", "memory"} {
		procs := filepath.Join(cg.V1[controller], cgroup, "cgroup.procs")
		if err := os.WriteFile(procs, []byte(strconv.Itoa(sleeper.Process.Pid)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := m.RemovePod(pod.UID); !errors.Is(err, errBusy) {
		t.Fatalf("RemovePod with a process inside = %v, want errBusy", err)
	}
	if !m.tree.exists(cgroup) {
		t.Fatal("a busy pod cgroup was removed")
	}
	if err := sleeper.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	_ = sleeper.Wait()
	m.removeStuck()
	for controller, mount := range cg.V1 {
		if _, err := os.Stat(filepath.Join(mount, cgroup)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("the pod cgroup is left in %s: %v", controller, err)
		}
	}
	if _, _, ok := m.PodCgroup(pod.UID); ok {
		t.Error("the removed pod still has a plan")
	}
}

func readCgroup(t *testing.T, cg *machine.Cgroups, path string) *CgroupValues {
	t.Helper()
	v, err := ReadCgroup(cg, path)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
