package cgroup

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubelettypes "k8s.io/kubelet/pkg/types"

	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
)

// fakeSysfs is a node of n CPUs, one per core, on NUMA node 0.
func fakeSysfs(t *testing.T, online string, n int) string {
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
	write("devices/system/cpu/online", online+"\n")
	for i := range n {
		dir := filepath.Join("devices/system/cpu", "cpu"+string(rune('0'+i)))
		write(filepath.Join(dir, "topology/core_id"), string(rune('0'+i)))
		write(filepath.Join(dir, "topology/physical_package_id"), "0")
		write(filepath.Join(dir, "node0/cpumap"), "3")
	}
	return root
}

// fakeRuntime runs the given containers and records cpuset updates.
type fakeRuntime struct {
	mu         sync.Mutex
	containers []*runtimeapi.Container
	updates    map[string]string
}

func (f *fakeRuntime) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.containers, nil
}

func (f *fakeRuntime) UpdateContainerResources(_ context.Context, id string, r *runtimeapi.ContainerResources) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.updates[id] = r.GetLinux().GetCpusetCpus()
	return nil
}

func (f *fakeRuntime) run(id, uid, name string) {
	f.containers = append(f.containers, &runtimeapi.Container{Id: id, Labels: map[string]string{
		kubelettypes.KubernetesPodUIDLabel: uid, kubelettypes.KubernetesContainerNameLabel: name}})
}

func TestStaticCPUManager(t *testing.T) {
	sysfs := fakeSysfs(t, "0-1", 2)
	root := t.TempDir()
	plugin := servePlanner(t, map[string]any{"cpu_manager_policy": "static", "reserved_system_cpus": "0"})
	rt := &fakeRuntime{updates: map[string]string{}}
	newManager := func() *Manager {
		m, err := New(Options{Plugin: plugin, Capacity: testCapacity(), Cgroups: fakeV2Tree(t, "/kubepods", "/kubepods/burstable", "/kubepods/besteffort"),
			RootDir: root, Runtime: rt, SysFS: sysfs, Logger: testLogger(t, &logBuffer{})})
		if err != nil {
			t.Fatal(err)
		}
		return m
	}
	m := newManager()
	ctx := t.Context()
	best := testPod("be", [2]string{"", ""})
	if _, err := m.PlanPod(ctx, best); err != nil {
		t.Fatal(err)
	}
	rt.run("be-c0", "be", "c0")
	if err := m.reconcileCPUs(ctx); err != nil {
		t.Fatal(err)
	}
	if rt.updates["be-c0"] != "0-1" {
		t.Fatalf("before any exclusive CPU the shared pool is every CPU; got %q", rt.updates["be-c0"])
	}

	g := guaranteed("g", "1", "100Mi")
	if d, err := m.Admit(ctx, g, nil); err != nil || !d.Admit {
		t.Fatalf("admit the Guaranteed pod: %+v, %v", d, err)
	}
	plan, err := m.PlanPod(ctx, g)
	if err != nil || plan.Containers["c0"].GetCpusetCpus() != "1" {
		t.Fatalf("the Guaranteed container gets CPU 1 for itself; got %v, %v", plan.Containers["c0"], err)
	}
	if plan, _ := m.PlanPod(ctx, best); plan.Containers["c0"].GetCpusetCpus() != "0" {
		t.Fatalf("the shared pool shrinks to CPU 0; got %q", plan.Containers["c0"].GetCpusetCpus())
	}
	if err := m.reconcileCPUs(ctx); err != nil || rt.updates["be-c0"] != "0" {
		t.Fatalf("reconcile writes the shrunk pool to the running container; got %q, %v", rt.updates["be-c0"], err)
	}
	if got := m.AllocatableCPUs(); len(got) != 1 || got[0] != 1 {
		t.Fatalf("allocatable CPUs %v, want [1]", got)
	}

	// No CPU is handed out twice: a second Guaranteed pod finds none.
	if d, err := m.Admit(ctx, guaranteed("g2", "1", "100Mi"), []*v1.Pod{g}); err != nil || d.Admit || d.Reason != ReasonUnexpectedAdmissionError {
		t.Fatalf("a second exclusive CPU: %+v, %v; want a rejection", d, err)
	}
	if _, _, err := m.cpu.checkAllocation(guaranteed("g3", "1", "100Mi"), &cgroupv1.AllocateCPUsResponse{PolicyName: "static", Admit: true, ReservedCpus: "0",
		Assignments: []*cgroupv1.CPUAssignment{{PodUid: "g3", ContainerName: "c0", CpusetCpus: "1"}}}); err == nil {
		t.Fatal("the core accepted CPU 1 twice")
	}
	if _, _, err := m.cpu.checkAllocation(guaranteed("g3", "1", "100Mi"), &cgroupv1.AllocateCPUsResponse{PolicyName: "static", Admit: true, ReservedCpus: "0",
		Assignments: []*cgroupv1.CPUAssignment{{PodUid: "g3", ContainerName: "c0", CpusetCpus: "0"}}}); err == nil {
		t.Fatal("the core accepted a reserved CPU")
	}

	// The state file is the kubelet's, and a new core reads it back.
	var cp CPUManagerCheckpoint
	raw, err := os.ReadFile(filepath.Join(root, cpuStateFile))
	if err != nil || json.Unmarshal(raw, &cp) != nil {
		t.Fatalf("read the state: %v", err)
	}
	if cp.PolicyName != "static" || cp.DefaultCPUSet != "0" || cp.Entries["g"]["c0"] != "1" || cp.Checksum == 0 || cp.Checksum != cp.sum() {
		t.Fatalf("state file %s", raw)
	}
	m2 := newManager()
	if plan, err := m2.PlanPod(ctx, g); err != nil || plan.Containers["c0"].GetCpusetCpus() != "1" {
		t.Fatalf("after a restart the container keeps CPU 1; got %v, %v", plan.Containers["c0"], err)
	}
	if d, err := m2.Admit(ctx, g, nil); err != nil || !d.Admit {
		t.Fatalf("admitted again after a restart: %+v, %v", d, err)
	}

	// Releasing the pod grows the pool back.
	if err := m2.RemovePod(types.UID("g")); err != nil {
		t.Fatal(err)
	}
	if plan, _ := m2.PlanPod(ctx, best); plan.Containers["c0"].GetCpusetCpus() != "0-1" {
		t.Fatalf("the shared pool grows back; got %q", plan.Containers["c0"].GetCpusetCpus())
	}

	if _, err := loadCPUState(filepath.Join(root, cpuStateFile)); err != nil {
		t.Fatalf("a state without entries reads back: %v", err)
	}

	// A corrupt state file stops the manager rather than hand CPUs out twice.
	if err := os.WriteFile(filepath.Join(root, cpuStateFile), []byte(`{"policyName":"static","defaultCpuSet":"0","entries":{"x":{"c":"1"}},"checksum":1}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := New(Options{Plugin: plugin, Capacity: testCapacity(), Cgroups: fakeV2Tree(t), RootDir: root, Runtime: rt, SysFS: sysfs}); err == nil {
		t.Fatal("a state file failing its checksum was accepted")
	}
}

// The checksums of upstream's own test checkpoints
// (pkg/kubelet/cm/cpumanager/state/state_checkpoint_test.go): either agent
// reads the other's state file.
func TestCPUCheckpointChecksumIsUpstreams(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want Checksum
	}{
		{`{"policyName": "none", "defaultCPUSet": "4-6", "entries": {}}`, 354655845},
		{`{"policyName": "none", "defaultCPUSet": "1-3", "entries": {"pod": {"container1": "4-6", "container2": "1-3"}}}`, 3610638499},
		{`{"policyName": "other", "defaultCPUSet": "1-3", "entries": {}}`, 1394507217},
	} {
		var cp CPUManagerCheckpoint
		if err := json.Unmarshal([]byte(tc.raw), &cp); err != nil {
			t.Fatal(err)
		}
		if got := cp.sum(); got != tc.want {
			t.Errorf("%s: checksum %d, want %d", tc.raw, got, tc.want)
		}
	}
}

func TestFitAllocatesNothing(t *testing.T) {
	plugin := servePlanner(t, map[string]any{"cpu_manager_policy": "static", "reserved_system_cpus": "0"})
	m, err := New(Options{Plugin: plugin, Capacity: testCapacity(), Cgroups: fakeV2Tree(t, "/kubepods", "/kubepods/burstable", "/kubepods/besteffort"),
		RootDir: t.TempDir(), Runtime: &fakeRuntime{updates: map[string]string{}}, SysFS: fakeSysfs(t, "0-1", 2), Logger: testLogger(t, &logBuffer{})})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	g := guaranteed("g", "1", "100Mi")
	// The fit alone, asked twice (as for pods asked about at once), hands
	// out no CPU.
	for range 2 {
		if d, err := m.Fit(ctx, g, nil); err != nil || !d.Admit {
			t.Fatalf("Fit of the Guaranteed pod: %+v, %v", d, err)
		}
	}
	if got := len(m.cpu.state.assigned); got != 0 {
		t.Fatalf("Fit assigned CPUs to %d pods, want none", got)
	}
	if d, err := m.AllocateCPUs(ctx, g, nil); err != nil || !d.Admit {
		t.Fatalf("AllocateCPUs: %+v, %v", d, err)
	}
	if set := m.cpu.state.assigned["g"]["c0"]; set.String() != "1" {
		t.Fatalf("after AllocateCPUs the container holds %q, want CPU 1", set.String())
	}
}
