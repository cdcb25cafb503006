package podruntime

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

func TestTerminationOrdering(t *testing.T) {
	pod := testPod(withInitContainers(sidecar("s1"), testContainer("init"), sidecar("s2")))
	o := newTerminationOrdering(pod, []string{"a", "b", "s1", "s2"})

	// Regular containers and plain init containers wait for nothing.
	for _, name := range []string{"a", "b", "init"} {
		if n := len(o.prereqs[name]); n != 0 {
			t.Errorf("%s waits on %d containers, want none", name, n)
		}
	}
	// s2 waits on the regular containers; s1 on them and on s2.
	if n := len(o.prereqs["s2"]); n != 2 {
		t.Errorf("s2 waits on %d containers, want the 2 regular ones", n)
	}
	if n := len(o.prereqs["s1"]); n != 3 {
		t.Errorf("s1 waits on %d containers, want the 2 regular ones and s2", n)
	}

	// Once a, b and s2 stopped, s1's turn comes without using its grace.
	done := make(chan time.Duration, 1)
	go func() { done <- o.waitForTurn("s1", 3600) }()
	for _, name := range []string{"a", "b", "s2"} {
		o.containerTerminated(name)
	}
	if waited := <-done; waited >= time.Hour {
		t.Errorf("s1 waited %v, its whole grace period", waited)
	}
}

func TestTerminationOrderingSkipsStoppedContainers(t *testing.T) {
	pod := testPod(withInitContainers(sidecar("s1")))
	// Only the sidecar runs: nothing holds it back.
	o := newTerminationOrdering(pod, []string{"s1"})
	if waited := o.waitForTurn("s1", 3600); waited >= time.Hour {
		t.Errorf("s1 waited %v for containers that were not running", waited)
	}
	if waited := o.waitForTurn("s1", 0); waited != 0 {
		t.Errorf("with no grace left s1 waited %v", waited)
	}
}

func TestTerminationGracePeriod(t *testing.T) {
	probeGrace := ptr(int64(3))
	for _, tc := range []struct {
		name string
		pod  func(*v1.Pod)
		kill containerToKill
		want int64
	}{
		{name: "the pod's", pod: func(*v1.Pod) {}, want: 30},
		{name: "a probe's own", pod: func(*v1.Pod) {}, kill: containerToKill{Reason: killReasonProbe, GracePeriod: probeGrace}, want: 3},
		{name: "a probe without its own", pod: func(*v1.Pod) {}, kill: containerToKill{Reason: killReasonProbe}, want: 30},
		{name: "deletion grace wins", pod: func(p *v1.Pod) { p.DeletionGracePeriodSeconds = ptr(int64(5)) },
			kill: containerToKill{Reason: killReasonProbe, GracePeriod: probeGrace}, want: 5},
		{name: "none set", pod: func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = nil }, want: minimumGracePeriod},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := terminationGracePeriod(testPod(tc.pod), tc.kill); got != tc.want {
				t.Errorf("terminationGracePeriod = %d, want %d", got, tc.want)
			}
		})
	}
}
