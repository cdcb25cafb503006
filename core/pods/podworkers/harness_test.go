package podworkers

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/microlet/microlet/core/pods/podcache"
	"github.com/microlet/microlet/core/pods/podspec"
	"github.com/microlet/microlet/core/runtime/container"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// Syncer method names, as calls record them.
const (
	syncPod        = "SyncPod"
	terminating    = "SyncTerminatingPod"
	terminatingRun = "SyncTerminatingRuntimePod"
	terminated     = "SyncTerminatedPod"
)

// call is one Syncer call the test observes.
type call struct {
	method      string
	uid         types.UID
	updateType  UpdateType
	pod         *v1.Pod
	runningPod  *container.Pod
	status      *container.PodStatus
	gracePeriod *int64
	statusFn    func(*v1.PodStatus)
	ctx         context.Context
	// reply is set when the test holds the method: the call waits for an
	// answer, or returns ctx's error when ctx ends first.
	reply chan reply
}

type reply struct {
	terminal bool
	err      error
}

// answer releases a held call.
func (c *call) answer(r reply) { c.reply <- r }

// fakeSyncer records every call. Held methods wait for the test to answer;
// others return the queued results, or success.
type fakeSyncer struct {
	calls   chan *call
	mu      sync.Mutex
	held    map[string]bool
	results map[string][]reply
}

func newFakeSyncer() *fakeSyncer {
	return &fakeSyncer{calls: make(chan *call, 100), held: map[string]bool{}, results: map[string][]reply{}}
}

func (f *fakeSyncer) hold(method string, on bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.held[method] = on
}

func (f *fakeSyncer) queue(method string, r ...reply) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.results[method] = append(f.results[method], r...)
}

func (f *fakeSyncer) do(c *call) reply {
	f.mu.Lock()
	held := f.held[c.method]
	var r reply
	if q := f.results[c.method]; len(q) > 0 {
		r, f.results[c.method] = q[0], q[1:]
	}
	f.mu.Unlock()
	if held {
		c.reply = make(chan reply, 1)
	}
	f.calls <- c
	if !held {
		return r
	}
	select {
	case r := <-c.reply:
		return r
	case <-c.ctx.Done():
		return reply{err: c.ctx.Err()}
	}
}

func (f *fakeSyncer) SyncPod(ctx context.Context, updateType UpdateType, pod *v1.Pod, status *container.PodStatus) (bool, error) {
	r := f.do(&call{method: syncPod, uid: pod.UID, updateType: updateType, pod: pod, status: status, ctx: ctx})
	return r.terminal, r.err
}

func (f *fakeSyncer) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, status *container.PodStatus, gracePeriod *int64, statusFn func(*v1.PodStatus)) error {
	return f.do(&call{method: terminating, uid: pod.UID, pod: pod, status: status, gracePeriod: gracePeriod, statusFn: statusFn, ctx: ctx}).err
}

func (f *fakeSyncer) SyncTerminatingRuntimePod(ctx context.Context, runningPod *container.Pod) error {
	return f.do(&call{method: terminatingRun, uid: runningPod.UID, runningPod: runningPod, ctx: ctx}).err
}

func (f *fakeSyncer) SyncTerminatedPod(ctx context.Context, pod *v1.Pod, status *container.PodStatus) error {
	return f.do(&call{method: terminated, uid: pod.UID, pod: pod, status: status, ctx: ctx}).err
}

type harness struct {
	t       *testing.T
	workers *PodWorkers
	syncer  *fakeSyncer
	cache   *podcache.Cache
	clock   *clocktesting.FakeClock
	queue   *WorkQueue
	reg     *prometheus.Registry
	// relists counts the workers' RelistSoon calls.
	relists atomic.Int32
}

func newHarness(t *testing.T) *harness {
	t.Helper()
	h := &harness{t: t, syncer: newFakeSyncer(), cache: podcache.New(), clock: clocktesting.NewFakeClock(t0), reg: prometheus.NewRegistry()}
	h.queue = NewWorkQueue(h.clock)
	w, err := New(Config{Syncer: h.syncer, Cache: h.cache, WorkQueue: h.queue, Clock: h.clock, Registerer: h.reg,
		RelistSoon: func() { h.relists.Add(1) }})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.workers = w
	h.cache.UpdateTime(t0)
	t.Cleanup(h.stop)
	return h
}

// stop ends every worker goroutine still running, as shutdown would.
func (h *harness) stop() {
	h.syncer.hold(syncPod, false)
	h.syncer.hold(terminating, false)
	h.syncer.hold(terminatingRun, false)
	h.syncer.hold(terminated, false)
	h.workers.mu.Lock()
	for uid, st := range h.workers.podSyncStatuses {
		if st.cancelFn != nil {
			st.cancelFn()
		}
		h.workers.cleanupPodUpdates(uid)
	}
	h.workers.mu.Unlock()
}

// refresh is a PLEG relist: the cache becomes fresher than any sync so far.
func (h *harness) refresh() {
	h.clock.Step(time.Second)
	h.cache.UpdateTime(h.clock.Now())
}

// next returns the next Syncer call, refreshing the cache as PLEG would.
func (h *harness) next() *call {
	h.t.Helper()
	deadline := time.After(10 * time.Second)
	for {
		select {
		case c := <-h.syncer.calls:
			return c
		case <-time.After(time.Millisecond):
			h.refresh()
		case <-deadline:
			h.t.Fatal("timed out waiting for a Syncer call")
			return nil
		}
	}
}

// expect returns the next call, failing unless it is method for uid.
func (h *harness) expect(method string, uid types.UID) *call {
	h.t.Helper()
	c := h.next()
	if c.method != method || c.uid != uid {
		h.t.Fatalf("got %s(%s); want %s(%s)", c.method, c.uid, method, uid)
	}
	return c
}

// idle waits until the pod's worker has nothing to do.
func (h *harness) idle(uid types.UID) {
	h.t.Helper()
	eventually(h.t, "the worker of "+string(uid)+" to be idle", func() bool {
		h.workers.mu.Lock()
		defer h.workers.mu.Unlock()
		st, ok := h.workers.podSyncStatuses[uid]
		return !ok || !st.working
	})
}

func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

func int64p(v int64) *int64 { return &v }

// newPod is a pod from the API (not static) with a 30 s grace period.
func newPod(uid types.UID, name string) *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: uid, Name: name, Namespace: "default"},
		Spec: v1.PodSpec{
			TerminationGracePeriodSeconds: int64p(30),
			Containers:                    []v1.Container{{Name: "app"}},
		},
	}
}

// staticPod is a pod from a manifest file.
func staticPod(uid types.UID, name string) *v1.Pod {
	p := newPod(uid, name)
	p.Annotations = map[string]string{podspec.ConfigSourceAnnotationKey: "file"}
	return p
}
