package syncloop

import (
	"slices"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/pods/podconfig"
)

func TestOrphansAreKilledOnlyOnceEverySourceReachedTheLoop(t *testing.T) {
	h := newHarness(t, 0)
	// Left by a previous run of the core; its source no longer has it.
	h.runtime.run("orphan-uid", "orphan", "app")

	// podconfig has read the source, but its pods have not reached the
	// loop yet: "not desired" may still mean "not handled yet".
	h.loop.housekeeping(h.ctx)
	if h.killRequested("orphan-uid") {
		t.Fatal("housekeeping killed a runtime pod before the loop had an update from every source")
	}

	h.send(podconfig.OpAdd) // the source's first set, empty
	h.loop.housekeeping(h.ctx)
	eventually(t, "the orphan is killed", func() bool { return h.runtime.killed("orphan-uid") })
}

func TestDeadLeftoversAreLeftToGarbageCollection(t *testing.T) {
	h := newHarness(t, 0)
	h.runtime.run("dead-uid", "dead", "app")
	h.runtime.stopAll("dead-uid")
	h.send(podconfig.OpAdd)
	h.loop.housekeeping(h.ctx)
	h.loop.housekeeping(h.ctx)
	if h.killRequested("dead-uid") {
		t.Error("housekeeping killed a pod of which nothing runs")
	}
}

func TestDesiredPodsOnTheRuntimeAreNotOrphans(t *testing.T) {
	h := newHarness(t, 0)
	pod := h.newPod("web", v1.RestartPolicyAlways)
	// The core restarted: the pod runs, and its source still has it.
	h.runtime.run(pod.UID, pod.Name, "app")
	h.send(podconfig.OpAdd, pod)
	h.waitSynced(pod)
	h.loop.housekeeping(h.ctx)
	h.loop.housekeeping(h.ctx)
	if h.killRequested(pod.UID) {
		t.Error("housekeeping killed a desired pod")
	}
}

// A pod that finished while its source still holds it stays finished: it
// is not active, does not count against the node's pods and does not run
// again.
func TestFinishedPodsStayInactive(t *testing.T) {
	h := newHarness(t, 1)
	done := h.newPod("job", v1.RestartPolicyNever)
	h.send(podconfig.OpAdd, done)
	h.waitSynced(done)
	h.runtime.exit(done.UID, "app", 0)
	h.waitPhase(done, v1.PodSucceeded)
	eventually(t, "the finished pod is cleaned up", func() bool { return h.runtime.cleanedUp(done.UID) })
	syncs := len(h.runtime.synced(done.UID))

	for range 3 {
		h.loop.housekeeping(h.ctx)
		h.loop.syncKnown(done.UID)
	}
	if got := h.activeNames(); len(got) != 0 {
		t.Errorf("active pods %v after housekeeping, want none", got)
	}
	next := h.newPod("next", v1.RestartPolicyAlways)
	h.send(podconfig.OpAdd, next)
	if st, ok := h.status(next); ok && st.Phase == v1.PodFailed {
		t.Errorf("a pod after a finished one was rejected: %s: %s", st.Reason, st.Message)
	}
	h.waitSynced(next)
	if got := len(h.runtime.synced(done.UID)); got != syncs {
		t.Errorf("the finished pod was synced %d more times", got-syncs)
	}
	if st, _ := h.status(done); st.Phase != v1.PodSucceeded {
		t.Errorf("the finished pod's phase is %s, want Succeeded", st.Phase)
	}
	if got := h.activeNames(); !slices.Equal(got, []string{"next"}) {
		t.Errorf("active pods %v, want [next]", got)
	}
}

// Housekeeping keeps upstream's pod accounting: a desired pod that runs and
// an orphan found on the runtime.
func TestHousekeepingCountsPods(t *testing.T) {
	h := newHarness(t, 0)
	pod := h.newPod("web", v1.RestartPolicyAlways)
	h.runtime.run("orphan-uid", "orphan", "app")
	h.send(podconfig.OpAdd, pod)
	h.waitSynced(pod)
	h.loop.housekeeping(h.ctx)

	c := h.loop.counts
	for name, tt := range map[string]struct {
		got  float64
		want float64
	}{
		"desired static":                       {testutil.ToFloat64(c.desired.WithLabelValues("true")), 1},
		"desired from an API server":           {testutil.ToFloat64(c.desired.WithLabelValues("")), 0},
		"active static":                        {testutil.ToFloat64(c.active.WithLabelValues("true")), 1},
		"orphans found":                        {testutil.ToFloat64(c.orphaned), 1},
		"working: syncing, desired, static":    {testutil.ToFloat64(c.working.WithLabelValues("sync", "desired", "true")), 1},
		"working: terminating, runtime only":   {testutil.ToFloat64(c.working.WithLabelValues("terminating", "runtime_only", "unknown")), 1},
		"working: terminated, desired, static": {testutil.ToFloat64(c.working.WithLabelValues("terminated", "desired", "true")), 0},
		"restarted static pods":                {testutil.ToFloat64(c.restarted.WithLabelValues("true")), 0},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: %v; want %v", name, tt.got, tt.want)
		}
	}
	// The orphan is not counted again while its worker drives it.
	h.loop.housekeeping(h.ctx)
	if got := testutil.ToFloat64(c.orphaned); got != 1 {
		t.Errorf("orphans found after a second housekeeping: %v; want 1", got)
	}
}
