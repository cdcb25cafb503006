package planner

import (
	"testing"

	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

func TestContainerOOMScoreAdj(t *testing.T) {
	const capacity = 4 * Gi
	burstable := func(memory string) *typesv1.Container {
		return ctr("app", rl(t, "memory", memory), nil)
	}
	critical := func(p *typesv1.Pod, class string) *typesv1.Pod {
		p.Critical, p.PriorityClassName = true, class
		return p
	}
	tests := []struct {
		name      string
		pod       *typesv1.Pod
		qos       string
		container int // index into containers; -1-i for init container i
		want      int64
	}{
		{"Guaranteed", pod("a", ctr("app", nil, nil)), Guaranteed, 0, -997},
		{"BestEffort", pod("a", ctr("app", nil, nil)), BestEffort, 0, 1000},
		{"Burstable: 1000 - 1000*request/capacity", pod("a", burstable("1Gi")), Burstable, 0, 750},
		{"Burstable without a memory request stays below BestEffort", pod("a", ctr("app", rl(t, "cpu", "1"), nil)), Burstable, 0, 999},
		{"Burstable requesting everything stays above Guaranteed", pod("a", burstable("4Gi")), Burstable, 0, 3},
		{"Burstable requesting more than the node", pod("a", burstable("8Gi")), Burstable, 0, 3},
		{"system-node-critical pods are spared like Guaranteed", critical(pod("a", burstable("1Gi")), "system-node-critical"), Burstable, 0, -997},
		{"system-node-critical BestEffort pods too", critical(pod("a", ctr("app", nil, nil)), "system-node-critical"), BestEffort, 0, -997},
		{"other critical pods (static pods) use the formula", critical(pod("a", burstable("1Gi")), ""), Burstable, 0, 750},
		{"a sidecar gets at most the smallest regular container's value",
			withInit(pod("a", burstable("2Gi"), burstable("1Gi")), sidecar("proxy", rl(t, "memory", "100Mi"), nil)), Burstable, -1, 750},
		{"a sidecar requesting more keeps its own lower value",
			withInit(pod("a", burstable("1Gi")), sidecar("proxy", rl(t, "memory", "2Gi"), nil)), Burstable, -1, 500},
		{"a regular init container uses its own request",
			withInit(pod("a", burstable("1Gi")), ctr("init", rl(t, "memory", "100Mi"), nil)), Burstable, -1, 976},
		{"pod-level requests share what containers leave unclaimed",
			// 2Gi at pod level, 1Gi claimed by app, 2 containers: each gets 512Mi more.
			withPodResources(withInit(pod("a", burstable("1Gi")), ctr("init", nil, nil)), rl(t, "memory", "2Gi"), nil), Burstable, 0, 625},
		{"pod-level requests count in a sidecar's cap too",
			// 3Gi at pod level, 1Gi claimed: each of 2 containers gets 1Gi more;
			// the sidecar's own 750 is capped by app's 1000 - 1000*2Gi/4Gi.
			withPodResources(withInit(pod("a", burstable("1Gi")), sidecar("proxy", nil, nil)), rl(t, "memory", "3Gi"), nil), Burstable, -1, 500},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.pod.Containers[0]
			if tt.container < 0 {
				c = tt.pod.InitContainers[-1-tt.container]
			}
			if got := containerOOMScoreAdj(tt.pod, tt.qos, c, capacity); got != tt.want {
				t.Errorf("oom_score_adj = %d, want %d", got, tt.want)
			}
		})
	}
}
