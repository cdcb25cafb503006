package cpumanager

import (
	"errors"
	"testing"

	topo "github.com/microlet/microlet/plugins/cgroup/topology"
	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// cpus is a node of cores x threads CPUs on one socket and NUMA node,
// numbered as Linux does (thread t of core c is CPU t*cores+c).
func cpus(cores, threads int) []*cgroupv1.CPUInfo {
	var out []*cgroupv1.CPUInfo
	for t := 0; t < threads; t++ {
		for c := 0; c < cores; c++ {
			out = append(out, &cgroupv1.CPUInfo{Id: int32(t*cores + c), CoreId: int32(c)})
		}
	}
	return out
}

func ctr(name string, reqMillis, limMillis int64) *typesv1.Container {
	mem := int64(1 << 20)
	return &typesv1.Container{Name: name, Resources: &typesv1.Resources{
		Requests: &typesv1.ResourceList{CpuMillis: &reqMillis, MemoryBytes: &mem},
		Limits:   &typesv1.ResourceList{CpuMillis: &limMillis, MemoryBytes: &mem},
	}}
}

func TestAllocate(t *testing.T) {
	for _, tc := range []struct {
		name     string
		policy   *Policy
		cpus     []*cgroupv1.CPUInfo
		assigned map[string]string
		pod      *typesv1.Pod
		want     map[string]string
		reason   string
		strict   string
	}{
		{name: "none decides nothing", policy: &Policy{Name: PolicyNone}, cpus: cpus(2, 1),
			pod: &typesv1.Pod{Uid: "p", Containers: []*typesv1.Container{ctr("a", 1000, 1000)}}, want: map[string]string{}},
		{name: "guaranteed integer gets the CPU beside the reserved one", policy: &Policy{Name: PolicyStatic, Reserved: "0"}, cpus: cpus(2, 1),
			pod: &typesv1.Pod{Uid: "p", Containers: []*typesv1.Container{ctr("a", 1000, 1000)}}, want: map[string]string{"a": "1"}},
		{name: "fractional guaranteed stays shared", policy: &Policy{Name: PolicyStatic, Reserved: "0"}, cpus: cpus(2, 1),
			pod: &typesv1.Pod{Uid: "p", Containers: []*typesv1.Container{ctr("a", 500, 500)}}, want: map[string]string{}},
		{name: "burstable stays shared", policy: &Policy{Name: PolicyStatic, Reserved: "0"}, cpus: cpus(2, 1),
			pod: &typesv1.Pod{Uid: "p", Containers: []*typesv1.Container{ctr("a", 1000, 2000)}}, want: map[string]string{}},
		{name: "regular init containers share, sidecars do not", policy: &Policy{Name: PolicyStatic, Reserved: "0"}, cpus: cpus(4, 1),
			pod: &typesv1.Pod{Uid: "p", InitContainers: []*typesv1.Container{ctr("init", 1000, 1000), func() *typesv1.Container {
				c := ctr("side", 1000, 1000)
				c.Restartable = true
				return c
			}()}, Containers: []*typesv1.Container{ctr("a", 2000, 2000)}}, want: map[string]string{"side": "1", "a": "2-3"}},
		{name: "taken CPUs are not handed out again", policy: &Policy{Name: PolicyStatic, Reserved: "0"}, cpus: cpus(2, 1),
			assigned: map[string]string{"other/a": "1"},
			pod:      &typesv1.Pod{Uid: "p", Containers: []*typesv1.Container{ctr("a", 1000, 1000)}},
			reason:   ReasonUnexpectedAdmissionError},
		{name: "reserved millicores round up to whole CPUs", policy: &Policy{Name: PolicyStatic, ReservedMillis: 500}, cpus: cpus(2, 1),
			pod: &typesv1.Pod{Uid: "p", Containers: []*typesv1.Container{ctr("a", 1000, 1000)}}, want: map[string]string{"a": "1"}},
		{name: "SMT: a single CPU fills a partly used core first", policy: &Policy{Name: PolicyStatic, Reserved: "0"}, cpus: cpus(2, 2),
			pod: &typesv1.Pod{Uid: "p", Containers: []*typesv1.Container{ctr("a", 1000, 1000)}}, want: map[string]string{"a": "2"}},
		{name: "SMT: two CPUs take a whole core", policy: &Policy{Name: PolicyStatic, Reserved: "0"}, cpus: cpus(2, 2),
			pod: &typesv1.Pod{Uid: "p", Containers: []*typesv1.Container{ctr("a", 2000, 2000)}}, want: map[string]string{"a": "1,3"}},
		{name: "full-pcpus-only refuses half a core", policy: &Policy{Name: PolicyStatic, Reserved: "0", FullPCPUsOnly: true}, cpus: cpus(2, 2),
			pod:    &typesv1.Pod{Uid: "p", Containers: []*typesv1.Container{ctr("a", 1000, 1000)}},
			reason: ReasonSMTAlignmentError},
		{name: "full-pcpus-only without a whole free core", policy: &Policy{Name: PolicyStatic, Reserved: "0", FullPCPUsOnly: true}, cpus: cpus(2, 2),
			pod:    &typesv1.Pod{Uid: "p", Containers: []*typesv1.Container{ctr("a", 4000, 4000)}},
			reason: ReasonSMTAlignmentError},
		{name: "full-pcpus-only without SMT is plain static", policy: &Policy{Name: PolicyStatic, Reserved: "0", FullPCPUsOnly: true}, cpus: cpus(2, 1),
			pod: &typesv1.Pod{Uid: "p", Containers: []*typesv1.Container{ctr("a", 1000, 1000)}}, want: map[string]string{"a": "1"}},
		{name: "strict reservation keeps reserved CPUs out of the shared pool", policy: &Policy{Name: PolicyStatic, Reserved: "0", StrictReservation: true}, cpus: cpus(2, 1),
			pod: &typesv1.Pod{Uid: "p", Containers: []*typesv1.Container{ctr("a", 500, 500)}}, want: map[string]string{}, strict: "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := &cgroupv1.AllocateCPUsRequest{Pod: tc.pod, Cpus: tc.cpus}
			for key, set := range tc.assigned {
				req.Assigned = append(req.Assigned, &cgroupv1.CPUAssignment{PodUid: key, ContainerName: "a", CpusetCpus: set})
			}
			a, err := tc.policy.NewAllocator(req)
			if err != nil {
				t.Fatal(err)
			}
			// The CPU manager alone: the topology manager's none policy.
			none := &topo.Policy{Name: topo.PolicyNone, Scope: topo.ScopeContainer}
			err = none.Admit(tc.pod, []int{0}, []topo.Provider{a})
			var refused *topo.AdmitError
			if tc.reason != "" {
				if !errors.As(err, &refused) || refused.Reason != tc.reason || refused.Message == "" {
					t.Fatalf("got %v, want a rejection %q", err, tc.reason)
				}
				return
			}
			if err != nil {
				t.Fatalf("rejected: %v", err)
			}
			got := map[string]string{}
			for _, a := range a.Assignments {
				got[a.GetContainerName()] = a.GetCpusetCpus()
			}
			if len(got) != len(tc.want) {
				t.Fatalf("assignments %v, want %v", got, tc.want)
			}
			for name, set := range tc.want {
				if got[name] != set {
					t.Fatalf("assignments %v, want %v", got, tc.want)
				}
			}
			if _, strict := a.Reserved(); strict != tc.strict {
				t.Fatalf("strict reserved %q, want %q", strict, tc.strict)
			}
		})
	}
}

func TestNewPolicy(t *testing.T) {
	for _, tc := range []struct {
		name     string
		policy   string
		options  map[string]string
		reserved string
		millis   int64
		ok       bool
	}{
		{"none", PolicyNone, nil, "", 0, true},
		{"static with reserved CPUs", PolicyStatic, map[string]string{OptionFullPCPUsOnly: "true"}, "0", 0, true},
		{"static with reserved millicores", PolicyStatic, nil, "", 100, true},
		{"static reserving nothing", PolicyStatic, nil, "", 0, false},
		{"unknown policy", "dynamic", nil, "", 0, false},
		{"options need static", PolicyNone, map[string]string{OptionFullPCPUsOnly: "true"}, "", 0, false},
		{"unknown option", PolicyStatic, map[string]string{"align-by-socket": "true"}, "0", 0, false},
		{"non-boolean option", PolicyStatic, map[string]string{OptionFullPCPUsOnly: "yes"}, "0", 0, false},
		{"bad CPU list", PolicyStatic, nil, "1-0", 0, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := NewPolicy(tc.policy, tc.options, tc.reserved, tc.millis)
			if (err == nil) != tc.ok {
				t.Fatalf("err = %v, want ok=%v", err, tc.ok)
			}
		})
	}
}

func TestCPUSetFormat(t *testing.T) {
	for in, want := range map[string]string{"": "", "0": "0", "3,1,2": "1-3", "0-1,4,6-7": "0-1,4,6-7"} {
		set, err := parseCPUs(in)
		if err != nil || set.String() != want {
			t.Fatalf("parseCPUs(%q) = %v, %v; want %q", in, set, err, want)
		}
	}
}
