package podworkers

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/pods/podcache"
	"github.com/microlet/microlet/core/runtime/container"
)

// queries is a snapshot of what the workers say about one pod.
type queries struct {
	knownTerminated, couldRun, finished, terminationRequested, containersTerminating, runtimeRemoved, contentRemoved bool
}

func (h *harness) queries(uid types.UID) queries {
	w := h.workers
	return queries{
		knownTerminated:       w.IsPodKnownTerminated(uid),
		couldRun:              w.CouldHaveRunningContainers(uid),
		finished:              w.ShouldPodBeFinished(uid),
		terminationRequested:  w.IsPodTerminationRequested(uid),
		containersTerminating: w.ShouldPodContainersBeTerminating(uid),
		runtimeRemoved:        w.ShouldPodRuntimeBeRemoved(uid),
		contentRemoved:        w.ShouldPodContentBeRemoved(uid),
	}
}

func TestLifecycleSyncTerminateFinish(t *testing.T) {
	h := newHarness(t)
	pod := newPod("a", "web")
	now := metav1.NewTime(t0)

	if got := h.queries("a"); !got.couldRun || got.finished || got.runtimeRemoved || got.contentRemoved || got.containersTerminating {
		t.Errorf("before the first SyncKnownPods an unknown pod may run: %+v", got)
	}

	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Create, Pod: pod})
	c := h.expect(syncPod, "a")
	if c.updateType != Create || c.status == nil || c.status.UID != "a" {
		t.Errorf("SyncPod(%v, status %+v); want Create with the cached status", c.updateType, c.status)
	}
	h.idle("a")
	if got := h.queries("a"); !got.couldRun || got.terminationRequested || got.knownTerminated {
		t.Errorf("syncing pod: %+v", got)
	}

	deleting := pod.DeepCopy()
	deleting.DeletionTimestamp = &now
	h.syncer.hold(terminating, true)
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Update, Pod: deleting})
	c = h.expect(terminating, "a")
	if c.gracePeriod == nil || *c.gracePeriod != 30 {
		t.Errorf("grace period %v; want the pod's 30", c.gracePeriod)
	}
	if got := h.queries("a"); !got.terminationRequested || !got.containersTerminating || !got.couldRun || got.knownTerminated || got.contentRemoved {
		t.Errorf("terminating pod: %+v", got)
	}
	c.answer(reply{})
	h.expect(terminated, "a")
	h.idle("a")
	if got := h.queries("a"); !got.knownTerminated || got.couldRun || !got.runtimeRemoved || !got.contentRemoved || !got.finished {
		t.Errorf("finished pod: %+v", got)
	}

	// The UID never starts again: updates are ignored.
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Create, Pod: pod})
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Sync, Pod: newPod("b", "other")})
	if c := h.next(); c.uid != "b" {
		t.Errorf("a finished pod was synced again: %s(%s)", c.method, c.uid)
	}
}

func TestTerminalSyncMovesOn(t *testing.T) {
	h := newHarness(t)
	h.syncer.queue(syncPod, reply{terminal: true})
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Create, Pod: newPod("a", "job")})
	h.expect(syncPod, "a")
	// No further update is needed to stop and finish a pod that is done.
	h.expect(terminating, "a")
	h.expect(terminated, "a")
	h.idle("a")
	if !h.workers.IsPodKnownTerminated("a") || h.workers.ShouldPodContentBeRemoved("a") {
		t.Error("a completed pod that was not deleted must be terminated but keep its content")
	}
}

func TestUpdatesCoalesce(t *testing.T) {
	h := newHarness(t)
	version := func(v string) *v1.Pod {
		p := newPod("a", "web")
		p.Labels = map[string]string{"v": v}
		return p
	}
	h.syncer.hold(syncPod, true)
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Create, Pod: version("1")})
	first := h.expect(syncPod, "a")
	for _, v := range []string{"2", "3", "4"} {
		h.workers.UpdatePod(UpdatePodOptions{UpdateType: Update, Pod: version(v)})
	}
	h.syncer.hold(syncPod, false)
	first.answer(reply{})
	if c := h.expect(syncPod, "a"); c.pod.Labels["v"] != "4" || c.updateType != Update {
		t.Errorf("after coalescing got version %s (%v); want only the latest, 4", c.pod.Labels["v"], c.updateType)
	}
	h.idle("a")
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Sync, Pod: version("5")})
	if c := h.expect(syncPod, "a"); c.pod.Labels["v"] != "5" {
		t.Errorf("an intermediate update was synced: version %s", c.pod.Labels["v"])
	}
}

func TestKillIsNeverLostAndCancelsTheSync(t *testing.T) {
	h := newHarness(t)
	h.syncer.hold(syncPod, true)
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Create, Pod: newPod("a", "web")})
	c := h.expect(syncPod, "a")

	var statusSet bool
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Kill, Pod: newPod("a", "web"), KillPodOptions: &KillPodOptions{
		PodStatusFunc: func(*v1.PodStatus) { statusSet = true },
	}})
	// A later ordinary update does not replace the kill.
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Sync, Pod: newPod("a", "web")})

	select {
	case <-c.ctx.Done():
	case <-time.After(10 * time.Second):
		t.Fatal("the kill did not cancel the sync in progress")
	}
	term := h.expect(terminating, "a")
	if term.statusFn == nil {
		t.Fatal("the kill's status function was not passed on")
	}
	term.statusFn(&v1.PodStatus{})
	if !statusSet {
		t.Error("the status function passed is not the kill's")
	}
	h.expect(terminated, "a")
}

func TestGracePeriodOnlyShrinks(t *testing.T) {
	h := newHarness(t)
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Create, Pod: newPod("a", "web")})
	h.expect(syncPod, "a")
	h.idle("a")

	h.syncer.hold(terminating, true)
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Kill, Pod: newPod("a", "web"), KillPodOptions: &KillPodOptions{PodTerminationGracePeriodSecondsOverride: int64p(20)}})
	first := h.expect(terminating, "a")
	if *first.gracePeriod != 20 {
		t.Fatalf("grace period %d; want the override 20", *first.gracePeriod)
	}

	// A longer one is ignored and does not interrupt.
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Kill, Pod: newPod("a", "web"), KillPodOptions: &KillPodOptions{PodTerminationGracePeriodSecondsOverride: int64p(60)}})
	select {
	case <-first.ctx.Done():
		t.Fatal("a longer grace period cancelled the termination in progress")
	default:
	}
	// A shorter one cancels it, and termination restarts with it.
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Kill, Pod: newPod("a", "web"), KillPodOptions: &KillPodOptions{PodTerminationGracePeriodSecondsOverride: int64p(5)}})
	<-first.ctx.Done()
	second := h.expect(terminating, "a")
	if *second.gracePeriod != 5 {
		t.Errorf("grace period %d after a shorter kill; want 5", *second.gracePeriod)
	}
	second.answer(reply{})
	h.expect(terminated, "a")
}

func TestEffectiveGracePeriod(t *testing.T) {
	pod := func(spec, deletion *int64) *v1.Pod {
		p := newPod("a", "web")
		p.Spec.TerminationGracePeriodSeconds = spec
		p.DeletionGracePeriodSeconds = deletion
		return p
	}
	tests := []struct {
		name          string
		current       int64
		pod           *v1.Pod
		override      *int64
		want          int64
		wantShortened bool
	}{
		{"spec", 0, pod(int64p(30), nil), nil, 30, false},
		{"no spec", 0, pod(nil, nil), nil, 1, false},
		{"zero spec is at least 1", 0, pod(int64p(0), nil), nil, 1, false},
		{"deletion grace wins over spec", 0, pod(int64p(30), int64p(10)), nil, 10, false},
		{"override wins over spec", 0, pod(int64p(30), nil), int64p(5), 5, false},
		{"override below deletion grace", 0, pod(int64p(30), int64p(10)), int64p(3), 3, false},
		{"override above deletion grace", 0, pod(int64p(30), int64p(10)), int64p(20), 10, false},
		{"zero override is at least 1", 0, pod(int64p(30), nil), int64p(0), 1, false},
		{"in force, nothing shorter", 20, pod(int64p(30), nil), nil, 20, false},
		{"in force, longer override ignored", 20, pod(int64p(30), nil), int64p(25), 20, false},
		{"in force, shorter override", 20, pod(int64p(30), nil), int64p(2), 2, true},
		{"in force, shorter deletion grace", 20, pod(int64p(30), int64p(8)), nil, 8, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var opts *KillPodOptions
			if tt.override != nil {
				opts = &KillPodOptions{PodTerminationGracePeriodSecondsOverride: tt.override}
			}
			got, shortened := effectiveGracePeriod(&podSyncStatus{gracePeriod: tt.current}, tt.pod, opts)
			if got != tt.want || shortened != tt.wantShortened {
				t.Errorf("effectiveGracePeriod = %d, %v; want %d, %v", got, shortened, tt.want, tt.wantShortened)
			}
		})
	}
}

func TestKillPodWaitsForTermination(t *testing.T) {
	h := newHarness(t)
	pod := newPod("a", "web")
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Create, Pod: pod})
	h.expect(syncPod, "a")
	h.idle("a")

	h.syncer.hold(terminating, true)
	done := make(chan error, 1)
	go func() { done <- h.workers.KillPod(pod, true, int64p(3), nil) }()
	c := h.expect(terminating, "a")
	if *c.gracePeriod != 3 || !h.workers.ShouldPodContentBeRemoved("a") {
		t.Errorf("eviction: grace %d, content removable %v; want 3 and true", *c.gracePeriod, h.workers.ShouldPodContentBeRemoved("a"))
	}
	select {
	case err := <-done:
		t.Fatalf("KillPod returned %v before the pod stopped", err)
	default:
	}
	c.answer(reply{})
	if err := <-done; err != nil {
		t.Errorf("KillPod: %v", err)
	}
	// Killing a terminated pod returns at once.
	if err := h.workers.KillPod(pod, false, nil, nil); err != nil {
		t.Errorf("KillPod of a terminated pod: %v", err)
	}
}

func TestKillPodTimesOut(t *testing.T) {
	h := newHarness(t)
	pod := newPod("a", "web")
	h.syncer.hold(terminating, true)
	done := make(chan error, 1)
	go func() { done <- h.workers.KillPod(pod, false, int64p(2), nil) }()
	h.expect(terminating, "a")
	var err error
	eventually(t, "KillPod to give up", func() bool {
		h.clock.Step(time.Second)
		select {
		case err = <-done:
			return true
		default:
			return false
		}
	})
	if err == nil || !strings.Contains(err.Error(), "timeout waiting to kill pod default/web after 10s") {
		t.Errorf("KillPod error %v; want a timeout after the 10 s floor", err)
	}
}

func TestNeverActsOnAStaleStatus(t *testing.T) {
	h := newHarness(t)
	pod := newPod("a", "web")
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Create, Pod: pod})
	first := h.expect(syncPod, "a")
	h.idle("a")
	lastSync := h.clock.Now()

	// A status read before the worker's last action must not be acted on.
	h.cache.Set("a", &container.PodStatus{UID: "a", Name: "stale"}, nil, lastSync.Add(-time.Millisecond))
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Sync, Pod: pod})
	h.clock.Step(time.Second)
	h.cache.Set("a", &container.PodStatus{UID: "a", Name: "fresh"}, nil, h.clock.Now())
	c := h.expect(syncPod, "a")
	if c.status.Name != "fresh" {
		t.Errorf("synced with status %q; want the one newer than the last sync (first sync had %q)", c.status.Name, first.status.Name)
	}
}

// dueIn is how long until the pod is due on the work queue.
func TestOneSlowPodDoesNotBlockAnother(t *testing.T) {
	h := newHarness(t)
	h.syncer.hold(syncPod, true)
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Create, Pod: newPod("slow", "slow")})
	slow := h.expect(syncPod, "slow")
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Create, Pod: newPod("fast", "fast")})
	fast := h.expect(syncPod, "fast")
	fast.answer(reply{})
	slow.answer(reply{})
}

func TestWorkerMetrics(t *testing.T) {
	h := newHarness(t)
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Create, Pod: newPod("a", "web"), StartTime: t0})
	h.expect(syncPod, "a")
	h.idle("a")
	families, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	samples := map[string]uint64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			name := f.GetName()
			for _, l := range m.GetLabel() {
				name += "{" + l.GetName() + "=" + l.GetValue() + "}"
			}
			samples[name] = m.GetHistogram().GetSampleCount()
		}
	}
	want := map[string]uint64{
		"kubelet_pod_worker_duration_seconds{operation_type=create}": 1,
		"kubelet_containers_per_pod_count":                           1,
	}
	for name, n := range want {
		if samples[name] != n {
			t.Errorf("%s has %d samples; want %d (gathered %v)", name, samples[name], n, samples)
		}
	}
}

func TestNewRejectsBadConfig(t *testing.T) {
	ok := Config{Syncer: newFakeSyncer(), Cache: podcache.New(), WorkQueue: NewWorkQueue(nil)}
	tests := []struct {
		name   string
		mutate func(*Config)
		want   string
	}{
		{"no syncer", func(c *Config) { c.Syncer = nil }, "Config.Syncer is nil"},
		{"no cache", func(c *Config) { c.Cache = nil }, "Config.Cache is nil"},
		{"negative resync", func(c *Config) { c.ResyncInterval = -time.Second }, "Config.ResyncInterval is -1s; expected a positive duration (or 0 for 1m0s)"},
		{"no queue", func(c *Config) { c.WorkQueue = nil }, "Config.WorkQueue is nil"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := ok
			tt.mutate(&cfg)
			if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("New error %v; want %q", err, tt.want)
			}
		})
	}
}

func TestUpdateWithoutAPodIsIgnored(t *testing.T) {
	h := newHarness(t)
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Create})
	h.workers.mu.Lock()
	defer h.workers.mu.Unlock()
	if len(h.workers.podSyncStatuses) != 0 || len(h.workers.podUpdates) != 0 {
		t.Error("an update without a pod started a worker")
	}
}

// Terminating and cleaning up a pod wait on a status newer than the last
// action: the worker asks PLEG to relist at once rather than wait up to a
// period (an edited static pod's new instance waits for both). Syncing a
// running pod leaves PLEG to its period.
func TestTerminationAsksForARelist(t *testing.T) {
	h := newHarness(t)
	pod := newPod("a", "web")
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Create, Pod: pod})
	h.expect(syncPod, "a")
	h.idle("a")
	if n := h.relists.Load(); n != 0 {
		t.Errorf("syncing a running pod asked for %d relists, want none", n)
	}
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Kill, Pod: pod})
	h.expect(terminating, "a")
	h.expect(terminated, "a")
	h.idle("a")
	if n := h.relists.Load(); n != 2 {
		t.Errorf("terminating and cleaning up asked for %d relists, want 2", n)
	}
}
