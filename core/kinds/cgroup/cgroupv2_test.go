package cgroup

import (
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// The node's and a pod's cgroups in a cgroup v2 tree, faked in a temp dir:
// the library writes the kernel's files, which the test reads back.
func TestCgroupsOnFakeV2(t *testing.T) {
	cg := fakeV2Tree(t, "/kubepods", "/kubepods/burstable", "/kubepods/besteffort")
	plugin := servePlanner(t, map[string]any{"system_reserved": map[string]any{"memory": "512Mi"}, "pod_pids_limit": 100})
	m, err := New(Options{Plugin: plugin, Capacity: testCapacity(), Cgroups: cg, Logger: testLogger(t, &logBuffer{})})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if err := m.UpdatePods(ctx, []*v1.Pod{testPod("b1", [2]string{"cpu=1", ""})}); err != nil {
		t.Fatal(err)
	}
	dir := func(p string) string { return filepath.Join(cg.Unified, p) }
	for file, want := range map[string]string{
		"kubepods/cpu.weight":             "79", // shares 2048
		"kubepods/memory.max":             strconv.FormatInt(4*Gi-512*Mi, 10),
		"kubepods/pids.max":               "10000",
		"kubepods/hugetlb.2MB.max":        "4611686018427387904",
		"kubepods/burstable/cpu.weight":   "39", // shares 1024
		"kubepods/besteffort/cpu.weight":  "1",  // shares 2
		"cgroup.subtree_control":          "+cpu +memory +pids +hugetlb",
		"kubepods/cgroup.subtree_control": "+cpu +memory +pids +hugetlb",
	} {
		if got := readFile(t, dir(file)); got != want {
			t.Errorf("%s = %q, want %q", file, got, want)
		}
	}

	pod := testPod("b2", [2]string{"cpu=500m,memory=256Mi", "cpu=500m,memory=512Mi"})
	plan, err := m.PlanPod(ctx, pod)
	if err != nil {
		t.Fatal(err)
	}
	if plan.CgroupParent != "/kubepods/burstable/podb2" {
		t.Errorf("CgroupParent = %q", plan.CgroupParent)
	}
	got := readCgroup(t, cg, plan.CgroupParent)
	if got.CPUWeight != cpuWeight(512) || got.CPUQuota != 50000 || got.CPUPeriod != 100000 || got.MemoryLimit != 512*Mi ||
		got.PidsLimit != 100 || got.HugePageLimits["2MB"] != 0 || len(got.HugePageLimits) != 1 {
		t.Errorf("pod cgroup = %+v", got)
	}
	if s := readFile(t, dir("kubepods/burstable/cgroup.subtree_control")); s != "+cpu +memory +pids +hugetlb" {
		t.Errorf("the pod's controllers were not enabled in its parent: %q", s)
	}
	c := plan.Containers["c0"]
	if c.GetUnified()["memory.oom.group"] != "1" || c.GetMemorySwapLimitInBytes() != 0 || len(c.GetHugepageLimits()) != 1 ||
		c.GetHugepageLimits()[0].GetPageSize() != "2MB" || c.GetOomScoreAdj() != 938 {
		t.Errorf("container resources = %v", c)
	}
	if plan.Sandbox.GetCpuShares() != 512 || plan.Sandbox.GetMemoryLimitInBytes() != 512*Mi || plan.Sandbox.GetUnified()["memory.oom.group"] != "1" {
		t.Errorf("sandbox resources = %v", plan.Sandbox)
	}

	// A process in the pod cgroup keeps it; once gone, the cgroup goes.
	procs := dir(plan.CgroupParent + "/cgroup.procs")
	if err := os.WriteFile(procs, []byte("4242\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.RemovePod(pod.UID); !errors.Is(err, errBusy) {
		t.Fatalf("RemovePod with a process inside = %v, want errBusy", err)
	}
	if err := os.WriteFile(procs, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	m.removeStuck()
	if _, err := os.Stat(dir(plan.CgroupParent)); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the pod cgroup is left: %v", err)
	}
}

// memory.oom.group and NoSwap on cgroup v2, as the kubelet sets them.
func TestContainerResourcesOnV2(t *testing.T) {
	for _, tt := range []struct {
		name                string
		singleProcess, swap bool
		want                map[string]string
	}{
		{"defaults", false, false, map[string]string{"memory.oom.group": "1"}},
		{"singleProcessOOMKill", true, false, nil},
		{"swap accounting: NoSwap", false, true, map[string]string{"memory.oom.group": "1", "memory.swap.max": "0"}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cg := fakeV2Tree(t, "/kubepods", "/kubepods/burstable")
			cg.SwapAccounting = tt.swap
			m, err := New(Options{Plugin: servePlanner(t, nil), Capacity: testCapacity(), Cgroups: cg, SingleProcessOOMKill: tt.singleProcess})
			if err != nil {
				t.Fatal(err)
			}
			plan, err := m.PlanPod(t.Context(), testPod("p", [2]string{"memory=1Gi", "memory=1Gi"}))
			if err != nil {
				t.Fatal(err)
			}
			got := plan.Containers["c0"].GetUnified()
			if len(got) != len(tt.want) {
				t.Fatalf("unified = %v, want %v", got, tt.want)
			}
			for k, v := range tt.want {
				if got[k] != v {
					t.Errorf("unified[%s] = %q, want %q", k, got[k], v)
				}
			}
		})
	}
}
