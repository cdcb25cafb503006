package planner

import (
	"testing"

	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

func TestAdmit(t *testing.T) {
	node := &typesv1.Node{Allocatable: rl(t, "cpu", "2", "memory", "4Gi", "ephemeral-storage", "10Gi", "pods", "3",
		"hugepages-2Mi", "8Mi", "example.com/gpu", "1")}
	running := []*typesv1.Pod{
		pod("r1", ctr("app", rl(t, "cpu", "1500m", "memory", "1Gi"), nil)),
		withInit(pod("r2", ctr("app", rl(t, "cpu", "100m"), nil)), ctr("init", rl(t, "cpu", "200m", "ephemeral-storage", "4Gi"), nil)),
	}
	tests := []struct {
		name        string
		pod         *typesv1.Pod
		admitted    []*typesv1.Pod
		reason, msg string
		allocatable *typesv1.ResourceList
	}{
		{name: "fits", pod: pod("p", ctr("app", rl(t, "cpu", "300m", "memory", "2Gi"), nil)), admitted: running},
		{name: "cpu", pod: pod("p", ctr("app", rl(t, "cpu", "500m"), nil)), admitted: running,
			// used: 1500m + max(100m, 200m).
			reason: "OutOfcpu", msg: "Node didn't have enough resource: cpu, requested: 500, used: 1700, capacity: 2000"},
		{name: "memory", pod: pod("p", ctr("app", rl(t, "memory", "3221225473"), nil)), admitted: running,
			reason: "OutOfmemory", msg: "Node didn't have enough resource: memory, requested: 3221225473, used: 1073741824, capacity: 4294967296"},
		{name: "ephemeral-storage", pod: pod("p", ctr("app", rl(t, "ephemeral-storage", "7Gi"), nil)), admitted: running,
			reason: "OutOfephemeral-storage", msg: "Node didn't have enough resource: ephemeral-storage, requested: 7516192768, used: 4294967296, capacity: 10737418240"},
		{name: "pods come first", pod: pod("p", ctr("app", rl(t, "cpu", "10"), nil)),
			admitted: append(running, pod("r3", ctr("app", nil, nil))),
			reason:   "OutOfpods", msg: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3"},
		{name: "a BestEffort pod is only counted", pod: pod("p", ctr("app", nil, nil)),
			admitted: []*typesv1.Pod{pod("big", ctr("app", rl(t, "cpu", "2", "memory", "4Gi"), nil))}},
		{name: "cpu before memory", pod: pod("p", ctr("app", rl(t, "cpu", "1", "memory", "4Gi"), nil)), admitted: running,
			reason: "OutOfcpu", msg: "Node didn't have enough resource: cpu, requested: 1000, used: 1700, capacity: 2000"},
		{name: "extended resources the node offers are checked", pod: pod("p", ctr("app", rl(t, "example.com/gpu", "2"), nil)),
			reason: "OutOfexample.com/gpu", msg: "Node didn't have enough resource: example.com/gpu, requested: 2, used: 0, capacity: 1"},
		{name: "extended resources the node does not offer are not", pod: pod("p", ctr("app", rl(t, "example.org/fpga", "2"), nil))},
		{name: "huge pages the node lacks", pod: pod("p", ctr("app", rl(t, "hugepages-1Gi", "1Gi"), nil)),
			reason: "OutOfhugepages-1Gi", msg: "Node didn't have enough resource: hugepages-1Gi, requested: 1073741824, used: 0, capacity: 0"},
		{name: "init containers: the largest of init and the sum", pod: withInit(pod("p", ctr("app", rl(t, "cpu", "100m"), nil)),
			ctr("init", rl(t, "cpu", "2100m"), nil)),
			reason: "OutOfcpu", msg: "Node didn't have enough resource: cpu, requested: 2100, used: 0, capacity: 2000"},
		{name: "sidecars add to the regular containers", pod: withInit(pod("p", ctr("app", rl(t, "cpu", "1"), nil)),
			sidecar("proxy", rl(t, "cpu", "1001m"), nil)),
			reason: "OutOfcpu", msg: "Node didn't have enough resource: cpu, requested: 2001, used: 0, capacity: 2000"},
		{name: "pod-level requests replace the containers'", pod: withPodResources(pod("p", ctr("app", rl(t, "cpu", "100m"), nil)), rl(t, "cpu", "3"), nil),
			reason: "OutOfcpu", msg: "Node didn't have enough resource: cpu, requested: 3000, used: 0, capacity: 2000"},
		{name: "no pods allocatable: nothing fits", pod: pod("p", ctr("app", nil, nil)), allocatable: rl(t, "cpu", "2"),
			reason: "OutOfpods", msg: "Node didn't have enough resource: pods, requested: 1, used: 0, capacity: 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := node
			if tt.allocatable != nil {
				n = &typesv1.Node{Allocatable: tt.allocatable}
			}
			got, err := Admit(&cgroupv1.AdmitRequest{Pod: tt.pod, Node: n, AdmittedPods: tt.admitted})
			if err != nil {
				t.Fatal(err)
			}
			if got.GetAdmit() != (tt.reason == "") || got.GetReason() != tt.reason || got.GetMessage() != tt.msg {
				t.Errorf("Admit = %v %q %q\nwant %v %q %q", got.GetAdmit(), got.GetReason(), got.GetMessage(), tt.reason == "", tt.reason, tt.msg)
			}
		})
	}
}

func TestAdmitRefusesIncompleteRequests(t *testing.T) {
	for name, req := range map[string]*cgroupv1.AdmitRequest{
		"no pod":              {Node: &typesv1.Node{Allocatable: rl(t, "pods", "1")}},
		"no node allocatable": {Pod: pod("p", ctr("app", nil, nil)), Node: &typesv1.Node{}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := Admit(req); err == nil {
				t.Error("Admit accepted the request")
			}
		})
	}
}
