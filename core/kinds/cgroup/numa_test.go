package cgroup

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

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

// numaPod is a Guaranteed pod of 100m CPU per container; init and
// containers are "name=memory", a sidecar's name starting with "side".
func numaPod(uid string, init []string, containers ...string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Namespace: "default", Name: "pod-" + uid}}
	always := v1.ContainerRestartPolicyAlways
	ctr := func(spec string) v1.Container {
		name, memory, _ := strings.Cut(spec, "=")
		r := parseResources("cpu=100m,memory=" + memory)
		c := v1.Container{Name: name, Resources: v1.ResourceRequirements{Requests: r, Limits: r}}
		if strings.HasPrefix(name, "side") {
			c.RestartPolicy = &always
		}
		return c
	}
	for _, c := range init {
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, ctr(c))
	}
	for _, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, ctr(c))
	}
	return pod
}

func describeBlocks(m *Manager, uid types.UID, container string) string {
	var parts []string
	for _, b := range m.ContainerMemory(uid, container) {
		parts = append(parts, fmt.Sprintf("%s=%dMi@%v", b.Type, b.Size/uMi, b.NUMAAffinity))
	}
	return strings.Join(parts, " ")
}

// As upstream's memory manager AddContainer: when a pod's next container
// is created, the memory of the regular init containers before it returns
// to the node (what the containers after them did not reuse: the plugin
// shrank their blocks), so that another pod can have it; a sidecar's
// stays. On two NUMA nodes: a pod whose init container held 3Gi of node 0
// keeps 1Gi there once its app container starts, and a pod needing 2Gi on
// one node, refused before, fits on node 0.
func TestInitContainersMemoryReleasedWhenTheNextContainerStarts(t *testing.T) {
	sysfs := twoNUMASysfs(t)
	root := t.TempDir()
	plugin := servePlanner(t, map[string]any{
		"memory_manager_policy":   "Static",
		"reserved_memory":         []any{map[string]any{"numa_node": 0, "limits": map[string]any{"memory": "100Mi"}}},
		"kube_reserved":           map[string]any{"memory": "100Mi"},
		"topology_manager_policy": "single-numa-node",
	})
	newManager := func() (*Manager, error) {
		return New(Options{Plugin: plugin, Capacity: twoNUMACapacity(), Cgroups: fakeV2Tree(t, "/kubepods", "/kubepods/burstable", "/kubepods/besteffort"),
			RootDir: root, Runtime: &fakeRuntime{updates: map[string]string{}}, SysFS: sysfs, Logger: testLogger(t, &logBuffer{})})
	}
	m, err := newManager()
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	staged := numaPod("staged", []string{"side=100Mi", "init=3Gi"}, "app=1Gi")
	fill := numaPod("fill", nil, "app=2560Mi")
	next := numaPod("next", nil, "app=2Gi")
	for _, p := range []*v1.Pod{staged, fill} {
		if d, err := m.Admit(ctx, p, slices.DeleteFunc([]*v1.Pod{staged, fill}, func(o *v1.Pod) bool { return o == p })); err != nil || !d.Admit {
			t.Fatalf("admit %s: %+v, %v", p.Name, d, err)
		}
	}
	for name, want := range map[string]string{"side": "memory=100Mi@[0]", "init": "memory=2048Mi@[0]", "app": "memory=1024Mi@[0]"} {
		if got := describeBlocks(m, staged.UID, name); got != want {
			t.Fatalf("%s's memory at admission: %q, want %q (the init container's block less what app reuses)", name, got, want)
		}
	}
	if got := describeBlocks(m, fill.UID, "app"); got != "memory=2560Mi@[1]" {
		t.Fatalf("the filling pod's memory: %q, want node 1's", got)
	}
	// Node 0 has 924Mi free, node 1 1.5Gi: no one node has 2Gi.
	if d, err := m.Admit(ctx, next, []*v1.Pod{staged, fill}); err != nil || d.Admit {
		t.Fatalf("a pod of 2Gi while the init container holds its memory: %+v, %v; want refused", d, err)
	}

	// The init container itself starting releases nothing.
	m.ContainerCreated(staged, &staged.Spec.InitContainers[1])
	if got := describeBlocks(m, staged.UID, "init"); got != "memory=2048Mi@[0]" {
		t.Fatalf("the init container's memory once it is created: %q, want kept", got)
	}
	m.ContainerCreated(staged, &staged.Spec.Containers[0])
	if got := describeBlocks(m, staged.UID, "init"); got != "" {
		t.Fatalf("the init container's memory once app is created: %q, want released", got)
	}
	if got := describeBlocks(m, staged.UID, "side"); got != "memory=100Mi@[0]" {
		t.Fatalf("the sidecar's memory once app is created: %q, want kept", got)
	}
	raw, err := os.ReadFile(filepath.Join(root, memoryStateFile))
	var cp MemoryManagerCheckpoint
	if err != nil || json.Unmarshal(raw, &cp) != nil || cp.Checksum != cp.sum() {
		t.Fatalf("read the state: %v %s", err, raw)
	}
	if _, ok := cp.Entries["staged"]["init"]; ok || cp.MachineState[0].MemoryMap["memory"].Reserved != 1124*uMi {
		t.Fatalf("memory_manager_state once app is created: %s; want no init entry and 1124Mi reserved on node 0", raw)
	}
	if d, err := m.Admit(ctx, next, []*v1.Pod{staged, fill}); err != nil || !d.Admit {
		t.Fatalf("a pod of 2Gi once the init container's memory returned: %+v, %v", d, err)
	}
	if got := describeBlocks(m, next.UID, "app"); got != "memory=2048Mi@[0]" {
		t.Fatalf("the next pod's memory: %q, want node 0's", got)
	}
	// A new core reads the state back as it is: no block handed out twice.
	m2, err := newManager()
	if err != nil {
		t.Fatalf("a new core on the state: %v", err)
	}
	if got := describeBlocks(m2, staged.UID, "init"); got != "" {
		t.Fatalf("the init container's memory after a restart: %q, want none", got)
	}
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
