package podworkers

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/runtime/container"
)

func TestStaticPodWaitsForItsPredecessor(t *testing.T) {
	h := newHarness(t)
	oldPod, newer := staticPod("old", "etcd-node1"), staticPod("new", "etcd-node1")
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Create, Pod: oldPod})
	h.expect(syncPod, "old")
	h.idle("old")

	// The manifest changed: a new UID under the same name. It must wait.
	h.syncer.hold(terminating, true)
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Create, Pod: newer})
	h.idle("new")
	if due := h.dueIn("new"); due < DefaultBackOffPeriod {
		t.Errorf("the waiting pod is requeued in %v; want a backoff", due)
	}
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Kill, Pod: oldPod})
	term := h.expect(terminating, "old") // and not SyncPod(new)
	// Still terminating: the new pod must still wait.
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Sync, Pod: newer})
	h.idle("new")
	term.answer(reply{})
	h.expect(terminated, "old")
	// The name is free: the waiting pod starts at once, not after its
	// backoff (upstream's 10-15 s after an edited manifest).
	h.expect(syncPod, "new")
	h.idle("old")

	// The sync loop's retry syncs it as a started pod.
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Sync, Pod: newer})
	h.expect(syncPod, "new")
	known := h.workers.SyncKnownPods([]*v1.Pod{newer})
	if s := known["new"]; s.State != SyncPod || !s.Static || !s.HasConfig || s.Orphan {
		t.Errorf("SyncKnownPods[new] = %+v", s)
	}
	if _, ok := known["old"]; ok {
		t.Error("the finished, undesired predecessor is still known")
	}
}

func TestStaticPodKilledBeforeStartNeverStarts(t *testing.T) {
	h := newHarness(t)
	running, waiting := staticPod("a", "etcd-node1"), staticPod("b", "etcd-node1")
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Create, Pod: running})
	h.expect(syncPod, "a")
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Create, Pod: waiting})
	h.idle("b")
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Kill, Pod: waiting})
	eventually(t, "the never-started pod to be finished", func() bool { return h.workers.ShouldPodBeFinished("b") })
	if !h.workers.IsPodKnownTerminated("b") {
		t.Error("a pod killed before it started is not known terminated")
	}
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Sync, Pod: running})
	if c := h.next(); c.uid != "a" || c.method != syncPod {
		t.Errorf("got %s(%s); the killed pod must never be synced", c.method, c.uid)
	}
}

func TestOrphanRuntimePod(t *testing.T) {
	h := newHarness(t)
	orphan := &container.Pod{UID: "orphan", Name: "gone", Namespace: "default"}
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Sync, RunningPod: orphan})
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Kill, RunningPod: orphan})
	c := h.expect(terminatingRun, "orphan")
	if c.runningPod != orphan {
		t.Errorf("SyncTerminatingRuntimePod got %+v", c.runningPod)
	}
	h.idle("orphan")
	h.workers.mu.Lock()
	_, tracked := h.workers.podSyncStatuses["orphan"]
	h.workers.mu.Unlock()
	if tracked {
		t.Error("an orphan is still tracked after its containers stopped")
	}
	h.workers.SyncKnownPods(nil)
	if h.workers.CouldHaveRunningContainers("orphan") || !h.workers.ShouldPodRuntimeBeRemoved("orphan") {
		t.Error("a stopped orphan may still run")
	}
}

func TestRuntimePodOfAKnownPodUsesItsSpec(t *testing.T) {
	h := newHarness(t)
	pod := newPod("a", "web")
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Create, Pod: pod})
	h.expect(syncPod, "a")
	h.idle("a")
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Kill, RunningPod: &container.Pod{UID: "a", Name: "web", Namespace: "default"}})
	c := h.expect(terminating, "a")
	if c.pod != pod || *c.gracePeriod != 30 {
		t.Errorf("terminating with pod %p grace %d; want the known spec and its grace period", c.pod, *c.gracePeriod)
	}
}

func TestSyncKnownPods(t *testing.T) {
	h := newHarness(t)
	kept, dropped := newPod("keep", "keep"), newPod("drop", "drop")
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Create, Pod: kept})
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Create, Pod: dropped})
	h.next()
	h.next()
	h.idle("keep")
	h.idle("drop")

	// A running pod that is no longer desired is terminated by its worker.
	h.syncer.hold(terminating, true)
	known := h.workers.SyncKnownPods([]*v1.Pod{kept})
	if s := known["drop"]; !s.Orphan || s.State != TerminatingPod || !s.HasConfig || s.Static {
		t.Errorf("SyncKnownPods[drop] = %+v; want an orphan being terminated", s)
	}
	if s := known["keep"]; s.Orphan || s.State != SyncPod {
		t.Errorf("SyncKnownPods[keep] = %+v", s)
	}
	c := h.expect(terminating, "drop")
	if c.gracePeriod != nil {
		t.Errorf("orphan grace period %d; want none given, so the pod's own applies, as upstream", *c.gracePeriod)
	}
	if !h.workers.ShouldPodContainersBeTerminating("drop") {
		t.Error("an orphan's containers are not marked terminating")
	}
	c.answer(reply{})
	h.expect(terminated, "drop")
	h.idle("drop")

	// Once finished it is forgotten, and unknown pods are known not to run.
	known = h.workers.SyncKnownPods([]*v1.Pod{kept})
	if _, ok := known["drop"]; ok {
		t.Error("a finished orphan is still known")
	}
	if h.workers.CouldHaveRunningContainers("drop") || !h.workers.ShouldPodContentBeRemoved("drop") || !h.workers.ShouldPodBeFinished("never-seen") {
		t.Error("after SyncKnownPods, unknown pods must be known stopped")
	}
}

func TestSameUIDCreatedAgainRestartsAfterTermination(t *testing.T) {
	h := newHarness(t)
	pod := staticPod("a", "web-node1")
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Create, Pod: pod})
	h.expect(syncPod, "a")
	h.syncer.hold(terminating, true)
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Kill, Pod: pod})
	c := h.expect(terminating, "a")
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Create, Pod: pod}) // the manifest is back, same content, same UID
	c.answer(reply{})
	h.expect(terminated, "a")
	h.idle("a")

	known := h.workers.SyncKnownPods([]*v1.Pod{pod})
	if _, ok := known["a"]; ok {
		t.Fatal("a finished pod created again was not forgotten")
	}
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Create, Pod: pod})
	if c := h.expect(syncPod, "a"); c.updateType != Create {
		t.Errorf("restart synced with %v; want Create", c.updateType)
	}
}

func TestTerminalPodFromAPreviousRunOnlyFinishes(t *testing.T) {
	h := newHarness(t)
	pod := newPod("a", "job")
	pod.Status.Phase = v1.PodSucceeded
	h.cache.Set("a", &container.PodStatus{UID: "a", Containers: []*container.ContainerStatus{{ID: "c1", State: container.StateExited}}}, nil, t0)
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Create, Pod: pod})
	if !h.workers.IsPodKnownTerminated("a") {
		t.Error("a terminal pod with nothing running is not known terminated at once")
	}
	h.expect(terminated, "a")
}
