package cgroup

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
)

// staticMemory is the planner with the static memory manager on the one
// NUMA node of fakeSysfs (100Mi reserved there, as kube_reserved holds
// back), the static CPU manager (CPU 0 reserved) and the single-numa-node
// topology manager.
// uGi and uMi are Gi and Mi as the memory manager counts, unsigned.
const (
	uGi = uint64(Gi)
	uMi = uint64(Mi)
)

var staticMemory = map[string]any{
	"memory_manager_policy":   "Static",
	"reserved_memory":         []any{map[string]any{"numa_node": 0, "limits": map[string]any{"memory": "100Mi"}}},
	"kube_reserved":           map[string]any{"memory": "100Mi"},
	"topology_manager_policy": "single-numa-node",
	"cpu_manager_policy":      "static",
	"reserved_system_cpus":    "0",
}

func TestStaticMemoryManager(t *testing.T) {
	sysfs := fakeSysfs(t, "0-1", 2)
	root := t.TempDir()
	plugin := servePlanner(t, staticMemory)
	rt := &fakeRuntime{updates: map[string]string{}}
	newManager := func() (*Manager, error) {
		return New(Options{Plugin: plugin, Capacity: testCapacity(), Cgroups: fakeV2Tree(t, "/kubepods", "/kubepods/burstable", "/kubepods/besteffort"),
			RootDir: root, Runtime: rt, SysFS: sysfs, Logger: testLogger(t, &logBuffer{})})
	}
	m, err := newManager()
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	g := guaranteed("g", "1", "1Gi")
	if d, err := m.Admit(ctx, g, nil); err != nil || !d.Admit {
		t.Fatalf("admit the Guaranteed pod: %+v, %v", d, err)
	}
	plan, err := m.PlanPod(ctx, g)
	if err != nil || plan.Containers["c0"].GetCpusetMems() != "0" {
		t.Fatalf("the Guaranteed container's cpuset.mems is node 0; got %v, %v", plan.Containers["c0"], err)
	}
	b := testPod("b", [2]string{"memory=1Gi", ""})
	if d, err := m.Admit(ctx, b, []*v1.Pod{g}); err != nil || !d.Admit {
		t.Fatalf("admit the Burstable pod: %+v, %v", d, err)
	}
	if plan, _ := m.PlanPod(ctx, b); plan.Containers["c0"].GetCpusetMems() != "" {
		t.Fatalf("a Burstable container's memory is not pinned; got cpuset.mems %q", plan.Containers["c0"].GetCpusetMems())
	}
	if !m.StaticMemoryPolicy() {
		t.Fatal("the Static memory policy is not reported for resizes")
	}
	got := m.ContainerMemory(g.UID, "c0")
	if len(got) != 1 || got[0].Type != "memory" || got[0].Size != uGi || len(got[0].NUMAAffinity) != 1 || got[0].NUMAAffinity[0] != 0 {
		t.Fatalf("the pod-resources view of the container's memory: %+v", got)
	}
	if alloc := m.AllocatableMemory(); len(alloc) != 1 || alloc[0].Size != 4*uGi-100*uMi {
		t.Fatalf("allocatable memory %+v, want 4Gi less 100Mi on node 0", alloc)
	}

	// The state file is the kubelet's.
	raw, err := os.ReadFile(filepath.Join(root, memoryStateFile))
	var cp MemoryManagerCheckpoint
	if err != nil || json.Unmarshal(raw, &cp) != nil || cp.Checksum != cp.sum() {
		t.Fatalf("read the state: %v %s", err, raw)
	}
	if cp.PolicyName != "Static" || cp.MachineState[0].MemoryMap["memory"].Reserved != uGi || cp.MachineState[0].NumberOfAssignments != 1 ||
		len(cp.Entries["g"]["c0"]) != 1 || cp.Entries["g"]["c0"][0].Size != uGi {
		t.Fatalf("memory_manager_state %s", raw)
	}

	// The one CPU to hand out is taken: the CPU manager has no hint, and
	// single-numa-node refuses the pod as upstream does. (On one NUMA node
	// the resource fit refuses too much memory before the memory manager
	// could: it counts every pod's requests against as much.)
	big := guaranteed("big", "1", "1Gi")
	if d, err := m.Admit(ctx, big, []*v1.Pod{g}); err != nil || d.Admit || d.Reason != "TopologyAffinityError" {
		t.Fatalf("a second exclusive CPU: %+v, %v; want TopologyAffinityError", d, err)
	}

	// The core has the final say: no block handed out twice.
	resp := &cgroupv1.AllocateCPUsResponse{PolicyName: "none", MemoryPolicyName: "Static", Admit: true,
		MemoryTables: []*cgroupv1.NUMANodeMemory{{Id: 0, Memory: map[string]*cgroupv1.MemoryTable{
			"memory": {Total: 4 * uGi, SystemReserved: 100 * uMi, Allocatable: 4*uGi - 100*uMi}, "hugepages-2Mi": {}}}},
		MemoryAssignments: []*cgroupv1.MemoryAssignment{{PodUid: "big", ContainerName: "c0", Blocks: []*cgroupv1.MemoryBlock{{NumaAffinity: []int32{0}, Type: "memory", Size: 3 * uGi}}}}}
	if _, err := m.cpu.checkMemory(big, resp); err == nil || !strings.Contains(err.Error(), "do not fit") {
		t.Fatalf("3Gi more than node 0 has: %v", err)
	}
	resp.MemoryAssignments[0].Blocks[0].NumaAffinity = []int32{1}
	resp.MemoryAssignments[0].Blocks[0].Size = uGi
	if _, err := m.cpu.checkMemory(big, resp); err == nil {
		t.Fatal("the core accepted memory on a NUMA node the machine lacks")
	}
	resp.MemoryAssignments[0].PodUid = "g"
	if _, err := m.cpu.checkMemory(big, resp); err == nil {
		t.Fatal("the core accepted memory for another pod")
	}
	resp.MemoryTables[0].Memory["memory"].SystemReserved = 200 * uMi
	resp.MemoryAssignments = nil
	if _, err := m.cpu.checkMemory(big, resp); err == nil || !strings.Contains(err.Error(), "drain the node") {
		t.Fatalf("a reservation changed while pods hold memory: %v", err)
	}

	// A new core reads the state back: the pod keeps its memory without
	// asking the plugin, and its containers their cpuset.mems.
	m2, err := newManager()
	if err != nil {
		t.Fatal(err)
	}
	if d, err := m2.Admit(ctx, g, nil); err != nil || !d.Admit {
		t.Fatalf("admit the Guaranteed pod again: %+v, %v", d, err)
	}
	if plan, err := m2.PlanPod(ctx, g); err != nil || plan.Containers["c0"].GetCpusetMems() != "0" {
		t.Fatalf("after a restart cpuset.mems is node 0; got %v, %v", plan.Containers["c0"], err)
	}
	// Its memory returns when it goes.
	if err := m2.RemovePod(g.UID); err != nil {
		t.Fatal(err)
	}
	if got := m2.ContainerMemory(g.UID, "c0"); got != nil {
		t.Fatalf("a removed pod's memory: %+v", got)
	}
	raw, _ = os.ReadFile(filepath.Join(root, memoryStateFile))
	cp = MemoryManagerCheckpoint{}
	if json.Unmarshal(raw, &cp) != nil || len(cp.Entries) != 0 || cp.MachineState[0].MemoryMap["memory"].Reserved != 0 || cp.MachineState[0].NumberOfAssignments != 0 {
		t.Fatalf("memory_manager_state after the pod went: %s", raw)
	}

	// A state file whose machine state does not match its entries, or
	// fails its checksum, stops the core, as it stops the kubelet.
	cp.MachineState[0].MemoryMap["memory"].Reserved = uGi
	cp.Checksum = cp.sum()
	raw, _ = json.Marshal(cp)
	if err := os.WriteFile(filepath.Join(root, memoryStateFile), raw, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := newManager(); err == nil || !strings.Contains(err.Error(), "drain the node") {
		t.Fatalf("an inconsistent state: %v", err)
	}
	if err := os.WriteFile(filepath.Join(root, memoryStateFile), []byte(`{"policyName":"Static","machineState":{},"checksum":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := newManager(); err == nil || !strings.Contains(err.Error(), "checksum") {
		t.Fatalf("a state failing its checksum: %v", err)
	}
}

// The checksum of upstream's own test checkpoint
// (pkg/kubelet/cm/memorymanager/state/state_checkpoint_test.go): either
// agent reads the other's state file.
func TestMemoryCheckpointChecksumIsUpstreams(t *testing.T) {
	raw := `{
		"policyName":"static",
		"machineState":{"0":{"numberOfAssignments":0,"memoryMap":{"memory":{"total":2048,"systemReserved":512,"allocatable":1536,"reserved":512,"free":1024}},"cells":[]}},
		"entries":{"pod":{"container1":[{"numaAffinity":[0],"type":"memory","size":512}]}},
		"checksum": 4215593881
	}`
	cp := MemoryManagerCheckpoint{MachineState: NUMANodeMap{}, Entries: ContainerMemoryAssignments{}}
	if err := json.Unmarshal([]byte(raw), &cp); err != nil {
		t.Fatal(err)
	}
	if got := cp.sum(); got != 4215593881 {
		t.Fatalf("checksum %d, want 4215593881", got)
	}
}
