package memorymanager

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	topo "github.com/microlet/microlet/plugins/cgroup/topology"
	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

const gi = 1 << 30

func numa(ids ...int32) []*cgroupv1.NUMANode {
	var out []*cgroupv1.NUMANode
	for _, id := range ids {
		out = append(out, &cgroupv1.NUMANode{Id: id, MemoryBytes: 4 * gi, HugepagesBytes: map[string]uint64{"hugepages-2Mi": gi}})
	}
	return out
}

func TestNewPolicyAndTables(t *testing.T) {
	mem := func(node int, v int64) Reservation {
		return Reservation{NUMANode: node, Limits: map[string]int64{"memory": v}}
	}
	for _, tc := range []struct {
		name     string
		policy   string
		reserved []Reservation
		nodes    []*cgroupv1.NUMANode
		node     map[string]int64
		err      string
	}{
		{name: "None needs nothing", policy: PolicyNone},
		{name: "unknown policy", policy: "static", err: "unknown memory_manager_policy"},
		{name: "Static without reserved memory", policy: PolicyStatic, err: "you should specify the system reserved memory"},
		{name: "not a memory type", policy: PolicyStatic, reserved: []Reservation{{Limits: map[string]int64{"cpu": 1, "memory": 1}}}, err: "not a memory type"},
		{name: "a node the machine lacks", policy: PolicyStatic, reserved: []Reservation{mem(1, gi)}, nodes: numa(0), err: "NUMA node 1 that does not exist"},
		{name: "not what node allocatable holds back", policy: PolicyStatic, reserved: []Reservation{mem(0, gi)}, nodes: numa(0),
			node: map[string]int64{"memory": 2 * gi}, err: "is not equal to the value"},
		{name: "adds up across nodes", policy: PolicyStatic, reserved: []Reservation{mem(0, gi), mem(1, gi)}, nodes: numa(0, 1),
			node: map[string]int64{"memory": 2 * gi}},
		{name: "node allocatable not known yet", policy: PolicyStatic, reserved: []Reservation{mem(0, gi)}, nodes: numa(0)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPolicy(tc.policy, tc.reserved)
			if err == nil {
				_, err = p.Tables(tc.nodes, tc.node)
			}
			if tc.err == "" && err != nil || tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
				t.Fatalf("got %v, want %q", err, tc.err)
			}
		})
	}
	p, _ := NewPolicy(PolicyStatic, []Reservation{mem(0, gi)})
	tables, err := p.Tables(numa(0), nil)
	if err != nil {
		t.Fatal(err)
	}
	// Upstream's default machine state: memory less reserved less hugepages.
	if m := tables[0]["memory"]; m.Total != 4*gi || m.SystemReserved != gi || m.Allocatable != 2*gi {
		t.Errorf("memory table %+v", m)
	}
	if h := tables[0]["hugepages-2Mi"]; h.Total != gi || h.Allocatable != gi {
		t.Errorf("hugepages table %+v", h)
	}
}

func container(name string, mem int64, restartable bool) *typesv1.Container {
	r := &typesv1.ResourceList{CpuMillis: ptr(int64(1000)), MemoryBytes: ptr(mem)}
	return &typesv1.Container{Name: name, Restartable: restartable, Resources: &typesv1.Resources{Requests: r, Limits: r}}
}

func ptr[T any](v T) *T { return &v }

// describe is a pod's assignments as "name:nodes:type=size ...".
func describe(as []*cgroupv1.MemoryAssignment) string {
	var parts []string
	for _, a := range as {
		for _, b := range a.GetBlocks() {
			parts = append(parts, fmt.Sprintf("%s:%v:%s=%dGi", a.GetContainerName(), b.GetNumaAffinity(), b.GetType(), b.GetSize()/gi))
		}
	}
	return strings.Join(parts, " ")
}

func TestAllocate(t *testing.T) {
	// Each node: 4Gi, 1Gi reserved, 1Gi of hugepages: 2Gi to hand out.
	other := func(nodes []int32, size uint64) []*cgroupv1.MemoryAssignment {
		return []*cgroupv1.MemoryAssignment{{PodUid: "other", ContainerName: "c", Blocks: []*cgroupv1.MemoryBlock{{NumaAffinity: nodes, Type: "memory", Size: size}}}}
	}
	for _, tc := range []struct {
		name       string
		nodes      []*cgroupv1.NUMANode
		topology   string
		scope      string
		guaranteed bool
		init       []*typesv1.Container
		containers []*typesv1.Container
		assigned   []*cgroupv1.MemoryAssignment
		want       string
		reason     string
	}{
		{name: "not Guaranteed: nothing pinned", nodes: numa(0, 1), topology: topo.PolicyRestricted, scope: topo.ScopeContainer,
			containers: []*typesv1.Container{container("app", gi, false)}, want: ""},
		{name: "fits one node: the first", nodes: numa(0, 1), topology: topo.PolicyRestricted, scope: topo.ScopeContainer, guaranteed: true,
			containers: []*typesv1.Container{container("app", gi, false)}, want: "app:[0]:memory=1Gi"},
		{name: "node 0 is taken: node 1", nodes: numa(0, 1), topology: topo.PolicySingleNUMANode, scope: topo.ScopeContainer, guaranteed: true,
			assigned: other([]int32{0}, 2*gi), containers: []*typesv1.Container{container("app", gi, false)}, want: "app:[1]:memory=1Gi"},
		{name: "bigger than a node: both, restricted admits", nodes: numa(0, 1), topology: topo.PolicyRestricted, scope: topo.ScopeContainer, guaranteed: true,
			containers: []*typesv1.Container{container("app", 3*gi, false)}, want: "app:[0 1]:memory=3Gi"},
		{name: "bigger than a node: single-numa-node refuses", nodes: numa(0, 1), topology: topo.PolicySingleNUMANode, scope: topo.ScopeContainer, guaranteed: true,
			containers: []*typesv1.Container{container("app", 3*gi, false)}, reason: topo.ReasonTopologyAffinityError},
		{name: "a node used alone cannot join a group", nodes: numa(0, 1), topology: topo.PolicyBestEffort, scope: topo.ScopeContainer, guaranteed: true,
			assigned: other([]int32{0}, gi), containers: []*typesv1.Container{container("app", 3*gi, false)}, reason: topo.ReasonUnexpectedAdmissionError},
		{name: "pod scope: the pod on one node", nodes: numa(0, 1), topology: topo.PolicySingleNUMANode, scope: topo.ScopePod, guaranteed: true,
			containers: []*typesv1.Container{container("a", gi, false), container("b", gi, false)}, want: "a:[0]:memory=1Gi b:[0]:memory=1Gi"},
		{name: "pod scope: too big for one node", nodes: numa(0, 1), topology: topo.PolicySingleNUMANode, scope: topo.ScopePod, guaranteed: true,
			containers: []*typesv1.Container{container("a", 2*gi, false), container("b", gi, false)}, reason: topo.ReasonTopologyAffinityError},
		{name: "the app reuses the init container's memory", nodes: numa(0), topology: topo.PolicySingleNUMANode, scope: topo.ScopeContainer, guaranteed: true,
			init: []*typesv1.Container{container("init", 2*gi, false)}, containers: []*typesv1.Container{container("app", 2*gi, false)},
			want: "init:[0]:memory=0Gi app:[0]:memory=2Gi"},
		{name: "a sidecar's memory is not reusable", nodes: numa(0), topology: topo.PolicySingleNUMANode, scope: topo.ScopeContainer, guaranteed: true,
			init: []*typesv1.Container{container("sidecar", gi, true)}, containers: []*typesv1.Container{container("app", 2*gi, false)},
			reason: topo.ReasonTopologyAffinityError},
		{name: "none topology: the memory manager picks", nodes: numa(0, 1), topology: topo.PolicyNone, scope: topo.ScopeContainer, guaranteed: true,
			assigned: other([]int32{0}, 2*gi), containers: []*typesv1.Container{container("app", gi, false)}, want: "app:[1]:memory=1Gi"},
		{name: "one node, full: unexpected", nodes: numa(0), topology: topo.PolicyNone, scope: topo.ScopeContainer, guaranteed: true,
			assigned: other([]int32{0}, 2*gi), containers: []*typesv1.Container{container("app", gi, false)}, reason: topo.ReasonUnexpectedAdmissionError},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &typesv1.Pod{Uid: "p", InitContainers: tc.init, Containers: tc.containers}
			req := &cgroupv1.AllocateCPUsRequest{Pod: pod, NumaNodes: tc.nodes, MemoryAssigned: tc.assigned}
			var reserved []Reservation
			for _, n := range tc.nodes {
				reserved = append(reserved, Reservation{NUMANode: int(n.GetId()), Limits: map[string]int64{"memory": gi}})
			}
			p, err := NewPolicy(PolicyStatic, reserved)
			if err != nil {
				t.Fatal(err)
			}
			tables, err := p.Tables(tc.nodes, nil)
			if err != nil {
				t.Fatal(err)
			}
			a := p.NewAllocator(req, tables, tc.guaranteed)
			top, _ := topo.NewPolicy(tc.topology, tc.scope)
			var nodes []int
			for _, n := range tc.nodes {
				nodes = append(nodes, int(n.GetId()))
			}
			err = top.Admit(pod, nodes, []topo.Provider{a})
			var refused *topo.AdmitError
			if tc.reason != "" {
				if !errors.As(err, &refused) || refused.Reason != tc.reason {
					t.Fatalf("Admit = %v (%s), want %s", err, describe(a.Result()), tc.reason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := describe(a.Result()); got != tc.want {
				t.Fatalf("assignments %q, want %q", got, tc.want)
			}
		})
	}
}
