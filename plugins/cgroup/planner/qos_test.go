package planner

import (
	"testing"

	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk/nodefacts"
)

func TestComputePodQOS(t *testing.T) {
	guaranteed := func() *typesv1.ResourceList { return rl(t, "cpu", "100m", "memory", "100Mi") }
	tests := []struct {
		name string
		pod  *typesv1.Pod
		want string
	}{
		{"no resources", pod("a", ctr("c", nil, nil)), BestEffort},
		{"only ephemeral-storage is not a QoS resource", pod("a", ctr("c", rl(t, "ephemeral-storage", "1Gi"), rl(t, "ephemeral-storage", "1Gi"))), BestEffort},
		{"zero requests count as none", pod("a", ctr("c", rl(t, "cpu", "0", "memory", "0"), nil)), BestEffort},
		{"requests equal limits", pod("a", ctr("c", guaranteed(), guaranteed())), Guaranteed},
		{"extended and hugepages do not spoil Guaranteed",
			pod("a", ctr("c", rl(t, "cpu", "1", "memory", "1Gi", "hugepages-2Mi", "4Mi", "example.com/gpu", "1"),
				rl(t, "cpu", "1", "memory", "1Gi", "hugepages-2Mi", "4Mi", "example.com/gpu", "1"))), Guaranteed},
		{"limits without requests (no API server defaulting)", pod("a", ctr("c", nil, guaranteed())), Burstable},
		{"requests without limits", pod("a", ctr("c", guaranteed(), nil)), Burstable},
		{"cpu only", pod("a", ctr("c", rl(t, "cpu", "1"), rl(t, "cpu", "1"))), Burstable},
		{"requests below limits", pod("a", ctr("c", rl(t, "cpu", "100m", "memory", "50Mi"), guaranteed())), Burstable},
		{"one Guaranteed and one BestEffort container", pod("a", ctr("g", guaranteed(), guaranteed()), ctr("b", nil, nil)), Burstable},
		{"two Guaranteed containers", pod("a", ctr("g1", guaranteed(), guaranteed()), ctr("g2", guaranteed(), guaranteed())), Guaranteed},
		{"an init container without limits makes the pod Burstable",
			withInit(pod("a", ctr("g", guaranteed(), guaranteed())), ctr("init", rl(t, "cpu", "1"), nil)), Burstable},
		{"a Guaranteed sidecar keeps the pod Guaranteed",
			withInit(pod("a", ctr("g", guaranteed(), guaranteed())), sidecar("proxy", guaranteed(), guaranteed())), Guaranteed},
		{"an init container with resources only makes a BestEffort pod Burstable",
			withInit(pod("a", ctr("b", nil, nil)), ctr("init", rl(t, "memory", "10Mi"), nil)), Burstable},
		{"pod-level resources decide: Guaranteed",
			withPodResources(pod("a", ctr("c", nil, nil)), rl(t, "cpu", "1", "memory", "1Gi"), rl(t, "cpu", "1", "memory", "1Gi")), Guaranteed},
		{"pod-level resources decide over Guaranteed containers",
			withPodResources(pod("a", ctr("c", guaranteed(), guaranteed())), rl(t, "cpu", "1"), rl(t, "cpu", "2")), Burstable},
		{"pod-level limits without memory",
			withPodResources(pod("a", ctr("c", nil, nil)), rl(t, "cpu", "1"), rl(t, "cpu", "1")), Burstable},
		{"pod-level requests only", withPodResources(pod("a", ctr("c", nil, nil)), rl(t, "memory", "1Gi"), nil), Burstable},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(nodefacts.ComputePodQOS(tt.pod)); got != tt.want {
				t.Errorf("ComputePodQOS = %s, want %s", got, tt.want)
			}
		})
	}
}

// A pod's QoS class never changes once set (upstream GetPodQOS reads the
// status first), so a resize cannot move a pod between QoS cgroups.
func TestPodQOSKeepsTheClassAPodHas(t *testing.T) {
	p := pod("a", ctr("c", nil, nil))
	p.QosClass = Burstable
	if got := PodQOS(p); got != Burstable {
		t.Errorf("PodQOS = %s, want the pod's own Burstable", got)
	}
	p.QosClass = "Platinum"
	if got := PodQOS(p); got != BestEffort {
		t.Errorf("PodQOS with an unknown class = %s, want the computed BestEffort", got)
	}
}
