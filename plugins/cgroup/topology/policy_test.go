package topology

import (
	"errors"
	"testing"

	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

func mask(nodes ...int) Mask {
	m, err := NewMask(nodes...)
	if err != nil {
		panic(err)
	}
	return m
}

// Upstream's merge cases (policy_test.go), on two NUMA nodes and on the
// one of this machine.
func TestMerge(t *testing.T) {
	two := []int{0, 1}
	for _, tc := range []struct {
		name      string
		nodes     []int
		policy    string
		providers []Hints
		want      Hint
		admit     bool
	}{
		{name: "none admits without a hint", nodes: two, policy: PolicyNone,
			providers: []Hints{{"cpu": {}}}, want: Hint{}, admit: true},
		{name: "no provider: anywhere, preferred", nodes: two, policy: PolicyRestricted,
			providers: nil, want: Hint{Affinity: mask(0, 1), Preferred: true}, admit: true},
		{name: "no preference: anywhere, preferred", nodes: two, policy: PolicyRestricted,
			providers: []Hints{nil, {"cpu": nil}}, want: Hint{Affinity: mask(0, 1), Preferred: true}, admit: true},
		{name: "two resources agree on node 1", nodes: two, policy: PolicyRestricted,
			providers: []Hints{
				{"cpu": {{mask(0), true}, {mask(1), true}, {mask(0, 1), false}}},
				{"gpu": {{mask(1), true}, {mask(0, 1), false}}},
			}, want: Hint{Affinity: mask(1), Preferred: true}, admit: true},
		{name: "narrowest preferred wins", nodes: two, policy: PolicyBestEffort,
			providers: []Hints{{"cpu": {{mask(0), true}, {mask(1), true}}}},
			want:      Hint{Affinity: mask(0), Preferred: true}, admit: true},
		{name: "disagreeing resources: restricted refuses", nodes: two, policy: PolicyRestricted,
			providers: []Hints{
				{"cpu": {{mask(0), true}}},
				{"gpu": {{mask(1), true}}},
			}, want: Hint{Affinity: mask(0, 1), Preferred: false}, admit: false},
		{name: "disagreeing resources: best-effort admits anyway", nodes: two, policy: PolicyBestEffort,
			providers: []Hints{
				{"cpu": {{mask(0), true}}},
				{"gpu": {{mask(1), true}}},
			}, want: Hint{Affinity: mask(0, 1), Preferred: false}, admit: true},
		{name: "only a two-node hint: restricted admits it if preferred", nodes: two, policy: PolicyRestricted,
			providers: []Hints{{"memory": {{mask(0, 1), true}}}},
			want:      Hint{Affinity: mask(0, 1), Preferred: true}, admit: true},
		{name: "only a two-node hint: single-numa-node refuses", nodes: two, policy: PolicySingleNUMANode,
			providers: []Hints{{"memory": {{mask(0, 1), true}}}},
			want:      Hint{Affinity: 0, Preferred: false}, admit: false},
		{name: "single-numa-node keeps the one-node hint", nodes: two, policy: PolicySingleNUMANode,
			providers: []Hints{{"cpu": {{mask(1), true}, {mask(0, 1), false}}}},
			want:      Hint{Affinity: mask(1), Preferred: true}, admit: true},
		{name: "no possible placement: restricted refuses", nodes: two, policy: PolicyRestricted,
			providers: []Hints{{"cpu": {}}}, want: Hint{Affinity: mask(0, 1)}, admit: false},
		{name: "no possible placement: best-effort admits", nodes: two, policy: PolicyBestEffort,
			providers: []Hints{{"cpu": {}}}, want: Hint{Affinity: mask(0, 1)}, admit: true},
		// One NUMA node, as this machine: everything aligns on node 0,
		// single-numa-node reports it as "anywhere"; a resource without a
		// placement is still refused.
		{name: "one node: cpu and memory align", nodes: []int{0}, policy: PolicySingleNUMANode,
			providers: []Hints{{"cpu": {{mask(0), true}}}, {"memory": {{mask(0), true}}}},
			want:      Hint{Affinity: 0, Preferred: true}, admit: true},
		{name: "one node: restricted keeps node 0", nodes: []int{0}, policy: PolicyRestricted,
			providers: []Hints{{"cpu": {{mask(0), true}}}, {"memory": {{mask(0), true}}}},
			want:      Hint{Affinity: mask(0), Preferred: true}, admit: true},
		{name: "one node: a device with no placement refuses", nodes: []int{0}, policy: PolicySingleNUMANode,
			providers: []Hints{{"example.com/dev": {}}, {"cpu": {{mask(0), true}}}},
			want:      Hint{Affinity: 0, Preferred: false}, admit: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := NewPolicy(tc.policy, ScopeContainer)
			if err != nil {
				t.Fatal(err)
			}
			got, admit := p.Merge(tc.nodes, tc.providers)
			if got != tc.want || admit != tc.admit {
				t.Fatalf("Merge = %v, %t; want %v, %t", got, admit, tc.want, tc.admit)
			}
		})
	}
}

func TestNewPolicy(t *testing.T) {
	for _, tc := range []struct{ policy, scope string }{{"restricted", "node"}, {"strict", "container"}, {"", "pod"}} {
		if _, err := NewPolicy(tc.policy, tc.scope); err == nil {
			t.Errorf("NewPolicy(%q, %q) accepted", tc.policy, tc.scope)
		}
	}
	if _, err := NewPolicy(PolicySingleNUMANode, ScopePod); err != nil {
		t.Error(err)
	}
}

func TestGenerateHints(t *testing.T) {
	two := []int{0, 1}
	for _, tc := range []struct {
		name                     string
		nodes                    []int
		all, available, reusable [][]int
		count                    int
		want                     []Hint
	}{
		{name: "free on both nodes", nodes: two, all: [][]int{{0}, {0}, {1}, {1}}, available: [][]int{{0}, {0}, {1}, {1}}, count: 2,
			want: []Hint{{mask(0), true}, {mask(1), true}, {mask(0, 1), false}}},
		{name: "node 0 is full", nodes: two, all: [][]int{{0}, {0}, {1}, {1}}, available: [][]int{{1}, {1}}, count: 2,
			want: []Hint{{mask(1), true}, {mask(0, 1), false}}},
		{name: "spanning is the narrowest possible", nodes: two, all: [][]int{{0}, {1}}, available: [][]int{{0}, {1}}, count: 2,
			want: []Hint{{mask(0, 1), true}}},
		{name: "reusable items pin the mask", nodes: two, all: [][]int{{0}, {1}}, available: [][]int{{0}}, reusable: [][]int{{1}}, count: 2,
			want: []Hint{{mask(0, 1), true}}},
		{name: "not enough free: no hint", nodes: two, all: [][]int{{0}, {1}}, available: [][]int{{0}}, count: 2,
			want: []Hint{}},
		{name: "a device on a node the machine lacks", nodes: []int{0}, all: [][]int{{1}}, available: [][]int{{1}}, count: 1,
			want: []Hint{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := GenerateHints(tc.nodes, tc.all, tc.available, tc.reusable, tc.count)
			if len(got) != len(tc.want) {
				t.Fatalf("hints %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("hints %v, want %v", got, tc.want)
				}
			}
		})
	}
}

// fakeProvider records the hints it was given to allocate with.
type fakeProvider struct {
	hints map[string]Hints
	pod   Hints
	fail  error
	got   map[string]Hint
}

func (f *fakeProvider) ContainerHints(c *typesv1.Container) Hints { return f.hints[c.GetName()] }
func (f *fakeProvider) PodHints() Hints                           { return f.pod }
func (f *fakeProvider) Allocate(c *typesv1.Container, h Hint) error {
	if f.fail != nil {
		return f.fail
	}
	f.got[c.GetName()] = h
	return nil
}

func TestAdmit(t *testing.T) {
	pod := &typesv1.Pod{Uid: "p", InitContainers: []*typesv1.Container{{Name: "init"}}, Containers: []*typesv1.Container{{Name: "app"}}}
	two := []int{0, 1}
	for _, tc := range []struct {
		name, policy, scope string
		provider            *fakeProvider
		reason              string
		want                map[string]Hint
	}{
		{name: "container scope: each container its own hint", policy: PolicyRestricted, scope: ScopeContainer,
			provider: &fakeProvider{hints: map[string]Hints{"init": {"cpu": {{mask(0), true}}}, "app": {"cpu": {{mask(1), true}}}}},
			want:     map[string]Hint{"init": {mask(0), true}, "app": {mask(1), true}}},
		{name: "pod scope: one hint for all", policy: PolicyRestricted, scope: ScopePod,
			provider: &fakeProvider{pod: Hints{"cpu": {{mask(1), true}}}},
			want:     map[string]Hint{"init": {mask(1), true}, "app": {mask(1), true}}},
		{name: "container scope: the app cannot be placed", policy: PolicySingleNUMANode, scope: ScopeContainer,
			provider: &fakeProvider{hints: map[string]Hints{"app": {"cpu": {}}}},
			reason:   ReasonTopologyAffinityError},
		{name: "none: allocate without hints", policy: PolicyNone, scope: ScopeContainer,
			provider: &fakeProvider{hints: map[string]Hints{"app": {"cpu": {}}}},
			want:     map[string]Hint{"init": {}, "app": {}}},
		{name: "a provider's plain error is unexpected", policy: PolicyBestEffort, scope: ScopeContainer,
			provider: &fakeProvider{fail: errors.New("boom")}, reason: ReasonUnexpectedAdmissionError},
		{name: "a provider's admission error keeps its reason", policy: PolicyBestEffort, scope: ScopeContainer,
			provider: &fakeProvider{fail: &AdmitError{Reason: "SMTAlignmentError", Message: "m"}}, reason: "SMTAlignmentError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.provider.got = map[string]Hint{}
			p, err := NewPolicy(tc.policy, tc.scope)
			if err != nil {
				t.Fatal(err)
			}
			err = p.Admit(pod, two, []Provider{tc.provider})
			var refused *AdmitError
			if tc.reason != "" {
				if !errors.As(err, &refused) || refused.Reason != tc.reason {
					t.Fatalf("Admit = %v, want %s", err, tc.reason)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for name, h := range tc.want {
				if tc.provider.got[name] != h {
					t.Fatalf("allocated with %v, want %v", tc.provider.got, tc.want)
				}
			}
		})
	}
}

// A device on a NUMA node this one-node machine lacks has no placement:
// single-numa-node refuses the pod, best-effort admits it.
func TestDevicesOnMissingNode(t *testing.T) {
	limits := &typesv1.ResourceList{Other: map[string]int64{"example.com/dev": 1}}
	pod := &typesv1.Pod{Uid: "p", Containers: []*typesv1.Container{{Name: "app", Resources: &typesv1.Resources{Limits: limits, Requests: limits}}}}
	devs := []*cgroupv1.ResourceDevices{{Resource: "example.com/dev", Devices: []*cgroupv1.DeviceNUMA{{Id: "d1", NumaNodes: []int64{1}, Free: true}}}}
	for policy, reason := range map[string]string{PolicySingleNUMANode: ReasonTopologyAffinityError, PolicyRestricted: ReasonTopologyAffinityError, PolicyBestEffort: ""} {
		p, _ := NewPolicy(policy, ScopeContainer)
		err := p.Admit(pod, []int{0}, []Provider{NewDevices(pod, []int{0}, devs)})
		var refused *AdmitError
		if reason == "" && err != nil || reason != "" && (!errors.As(err, &refused) || refused.Reason != reason) {
			t.Errorf("%s: Admit = %v, want %q", policy, err, reason)
		}
	}
	// Without topology the device has no preference: admitted.
	devs[0].Devices[0].NumaNodes = nil
	p, _ := NewPolicy(PolicySingleNUMANode, ScopePod)
	if err := p.Admit(pod, []int{0}, []Provider{NewDevices(pod, []int{0}, devs)}); err != nil {
		t.Errorf("a device without topology: %v", err)
	}
}
