package podworkers

import (
	"testing"
	"time"

	"k8s.io/client-go/tools/record"
)

// TestKillPodTimeoutEvent: a kill the runtime does not finish within 1.5
// times the grace period (at least 10 s) is upstream's ExceededGracePeriod
// on the pod.
func TestKillPodTimeoutEvent(t *testing.T) {
	h := newHarness(t)
	rec := record.NewFakeRecorder(1)
	h.workers.recorder = rec
	pod := newPod("a", "web")
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Create, Pod: pod})
	h.expect(syncPod, "a")
	h.idle("a")
	h.syncer.hold(terminating, true)

	done := make(chan error, 1)
	grace := int64(2)
	go func() { done <- h.workers.KillPod(pod, true, &grace, nil) }()
	h.expect(terminating, "a")
	// Time passes until KillPod gives up.
	var err error
	for waiting := true; waiting; {
		select {
		case err = <-done:
			waiting = false
		case <-time.After(10 * time.Millisecond):
			h.clock.Step(killTimeoutFloor)
		}
	}
	if err == nil {
		t.Fatal("KillPod returned no error after its timeout")
	}
	select {
	case got := <-rec.Events:
		if want := "Warning ExceededGracePeriod Container runtime did not kill the pod within specified grace period."; got != want {
			t.Errorf("event %q, want %q", got, want)
		}
	case <-time.After(time.Second):
		t.Error("no ExceededGracePeriod event")
	}
}
