package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/node/machine"
	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
)

// twoNUMASysfs is a machine of two NUMA nodes of 4Gi each, CPUs 0-1 on
// node 0 and 2-3 on node 1.
func twoNUMASysfs(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	write := func(rel, content string) {
		full := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("devices/system/cpu/online", "0-3\n")
	for cpu := range 4 {
		dir := fmt.Sprintf("devices/system/cpu/cpu%d", cpu)
		write(dir+"/topology/core_id", fmt.Sprint(cpu))
		write(dir+"/topology/physical_package_id", "0")
		write(fmt.Sprintf("%s/node%d/cpumap", dir, cpu/2), "f")
	}
	for node := range 2 {
		write(fmt.Sprintf("devices/system/node/node%d/meminfo", node), fmt.Sprintf("Node %d MemTotal:       4194304 kB\n", node))
	}
	return root
}

// twoNUMACapacity is the machine of twoNUMASysfs.
func twoNUMACapacity() *machine.Capacity {
	c := testCapacity()
	c.CPUMillis, c.MemoryBytes = 4000, 8*Gi
	return c
}

// The topology manager's affinity of a container asking for devices is
// kept for the devices manager while the pod is admitted: on two NUMA
// nodes whose free device is on node 1, node 1. The core refuses an
// affinity for another pod's container or a NUMA node the machine lacks.
func TestDeviceAffinityKeptForTheDevicesManager(t *testing.T) {
	plugin := servePlanner(t, map[string]any{"topology_manager_policy": "single-numa-node"})
	devices := func(resource string) ([]Device, bool) {
		if resource != "example.com/dev" {
			return nil, false
		}
		return []Device{{ID: "a", NUMANodes: []int64{0}}, {ID: "b", NUMANodes: []int64{1}, Free: true}}, true
	}
	m, err := New(Options{Plugin: plugin, Capacity: twoNUMACapacity(), Cgroups: fakeV2Tree(t, "/kubepods", "/kubepods/burstable", "/kubepods/besteffort"),
		RootDir: t.TempDir(), Runtime: &fakeRuntime{updates: map[string]string{}}, SysFS: twoNUMASysfs(t), Devices: devices, Logger: testLogger(t, &logBuffer{})})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	pod := testPod("d", [2]string{"", "example.com/dev=1"}, [2]string{"cpu=100m", ""})
	if d, err := m.Admit(ctx, pod, nil); err != nil || !d.Admit {
		t.Fatalf("admit: %+v, %v", d, err)
	}
	if got := m.ContainerAffinity(pod.UID, "c0"); !slices.Equal(got, []int64{1}) {
		t.Fatalf("c0's device affinity %v, want [1]", got)
	}
	if got := m.ContainerAffinity(pod.UID, "c1"); got != nil {
		t.Fatalf("c1 asks for no device; its affinity %v, want none", got)
	}

	for _, bad := range []*cgroupv1.ContainerAffinity{
		{ContainerName: "other", NumaNodes: []int32{0}},
		{ContainerName: "c0", NumaNodes: []int32{2}},
		{ContainerName: "c0"},
	} {
		resp := &cgroupv1.AllocateCPUsResponse{Admit: true, DeviceAffinities: []*cgroupv1.ContainerAffinity{bad}}
		if _, err := m.cpu.checkAffinities(pod, resp); err == nil {
			t.Errorf("the core accepted the device affinity %v", bad)
		}
	}

	// A later admitter refused the pod: the next admission forgets it.
	other := testPod("o", [2]string{"cpu=100m", ""})
	if d, err := m.Admit(ctx, other, nil); err != nil || !d.Admit {
		t.Fatalf("admit another pod: %+v, %v", d, err)
	}
	if got := m.ContainerAffinity(pod.UID, "c0"); got != nil {
		t.Fatalf("a pod no longer admitted keeps its affinity %v", got)
	}
	if d, err := m.Admit(ctx, pod, []*v1.Pod{other}); err != nil || !d.Admit {
		t.Fatalf("admit again: %+v, %v", d, err)
	}
	if got := m.ContainerAffinity(pod.UID, "c0"); !slices.Equal(got, []int64{1}) {
		t.Fatalf("c0's device affinity once admitted again %v, want [1]", got)
	}
	if err := m.RemovePod(pod.UID); err != nil {
		t.Fatal(err)
	}
	if got := m.ContainerAffinity(pod.UID, "c0"); got != nil {
		t.Fatalf("a removed pod keeps its affinity %v", got)
	}
}
