package pleg

import (
	"bytes"
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/microlet/microlet/core/pods/podcache"
	"github.com/microlet/microlet/core/runtime/container"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

// fakeRuntime is a runtime whose pods the test sets. GetPodStatus derives
// the status from the listing unless the test scripted an error or a block.
type fakeRuntime struct {
	mu        sync.Mutex
	pods      []*container.Pod
	listErr   error
	listCalls int
	statusErr map[types.UID]error
	// blocked pods wait in GetPodStatus until their channel closes or the
	// call's context ends; entered is told when they start waiting.
	blocked   map[types.UID]chan struct{}
	entered   chan types.UID
	inspected []types.UID
	// statusTime, when set, is the runtime's timestamp on every status.
	statusTime time.Time
}

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{statusErr: map[types.UID]error{}, blocked: map[types.UID]chan struct{}{}, entered: make(chan types.UID, 16)}
}

func (r *fakeRuntime) setPods(pods ...*container.Pod) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pods = pods
}

func (r *fakeRuntime) setStatusErr(uid types.UID, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		delete(r.statusErr, uid)
	} else {
		r.statusErr[uid] = err
	}
}

func (r *fakeRuntime) block(uid types.UID) (release func()) {
	r.mu.Lock()
	defer r.mu.Unlock()
	ch := make(chan struct{})
	r.blocked[uid] = ch
	return func() { close(ch) }
}

func (r *fakeRuntime) takeInspected() []types.UID {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := r.inspected
	r.inspected = nil
	slices.Sort(out)
	return out
}

func (r *fakeRuntime) ListPods(context.Context) ([]*container.Pod, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.listCalls++
	return r.pods, r.listErr
}

func (r *fakeRuntime) GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error) {
	r.mu.Lock()
	r.inspected = append(r.inspected, uid)
	wait := r.blocked[uid]
	err := r.statusErr[uid]
	statusTime := r.statusTime
	var pod *container.Pod
	for _, p := range r.pods {
		if p.UID == uid {
			pod = p
		}
	}
	r.mu.Unlock()
	if wait != nil {
		r.entered <- uid
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	if err != nil {
		return nil, err
	}
	s := statusFromPod(pod, name, namespace)
	s.Timestamp = statusTime
	return s, nil
}

// ListedPodStatus is GetPodStatus limited to the listed sandboxes and
// containers, dated at the listing, as the runtime manager's.
func (r *fakeRuntime) ListedPodStatus(ctx context.Context, listed *container.Pod, listedAt time.Time) (*container.PodStatus, error) {
	s, err := r.GetPodStatus(ctx, listed.UID, listed.Name, listed.Namespace)
	if err != nil {
		return nil, err
	}
	ids := states(listed)
	s.Sandboxes = slices.DeleteFunc(s.Sandboxes, func(sb *container.SandboxStatus) bool { _, ok := ids[sb.ID]; return !ok })
	s.Containers = slices.DeleteFunc(s.Containers, func(c *container.ContainerStatus) bool { _, ok := ids[c.ID]; return !ok })
	s.Timestamp = listedAt
	return s, nil
}

// statusFromPod is the status of a pod as listed; a nil pod (gone from
// the runtime) has none.
func statusFromPod(pod *container.Pod, name, namespace string) *container.PodStatus {
	if pod == nil {
		return &container.PodStatus{Name: name, Namespace: namespace}
	}
	s := &container.PodStatus{UID: pod.UID, Name: name, Namespace: namespace}
	for _, sb := range pod.Sandboxes {
		s.Sandboxes = append(s.Sandboxes, &container.SandboxStatus{ID: sb.ID, State: sb.State})
	}
	for _, c := range pod.Containers {
		s.Containers = append(s.Containers, &container.ContainerStatus{ID: c.ID, Name: c.Name, State: c.State, SandboxID: c.SandboxID})
	}
	return s
}

// pod builds a listed pod: "sb" is a ready sandbox; other items are
// "id=state" containers.
func pod(uid types.UID, items ...string) *container.Pod {
	p := &container.Pod{UID: uid, Name: "pod-" + string(uid), Namespace: "default"}
	for _, item := range items {
		id, state, ok := strings.Cut(item, "=")
		if !ok {
			p.Sandboxes = append(p.Sandboxes, &container.Sandbox{ID: item, State: container.SandboxReady})
			continue
		}
		if id == "sb" {
			p.Sandboxes = append(p.Sandboxes, &container.Sandbox{ID: id, State: container.SandboxState(state)})
			continue
		}
		p.Containers = append(p.Containers, &container.Container{ID: id, Name: "c-" + id, State: container.State(state)})
	}
	return p
}

type harness struct {
	pleg    *PLEG
	runtime *fakeRuntime
	cache   *podcache.Cache
	clock   *clocktesting.FakeClock
	reg     *prometheus.Registry
	logs    *logBuffer
}

func newHarness(t *testing.T, mutate func(*Config)) *harness {
	t.Helper()
	h := &harness{runtime: newFakeRuntime(), cache: podcache.New(), clock: clocktesting.NewFakeClock(t0), reg: prometheus.NewRegistry(), logs: &logBuffer{}}
	cfg := Config{
		Runtime:    h.runtime,
		Cache:      h.cache,
		Registerer: h.reg,
		Clock:      h.clock,
		Log:        hclog.New(&hclog.LoggerOptions{Output: h.logs, Level: hclog.Debug}),
	}
	if mutate != nil {
		mutate(&cfg)
	}
	p, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	h.pleg = p
	return h
}

// drain returns the delivered events as "type:container" strings, sorted.
func (h *harness) drain() []string {
	var out []string
	for {
		select {
		case e := <-h.pleg.Watch():
			out = append(out, string(e.ID)+":"+string(e.Type)+":"+e.Data)
		default:
			slices.Sort(out)
			return out
		}
	}
}

// fresh reports whether the cache serves uid as fresher than t without
// waiting.
func (h *harness) fresh(uid types.UID, t time.Time) (*container.PodStatus, error, bool) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	s, err := h.cache.GetNewerThan(ctx, uid, t)
	if errors.Is(err, context.Canceled) {
		return nil, nil, false
	}
	return s, err, true
}

// logBuffer collects log output for assertions.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// count returns how many lines contain s.
func (b *logBuffer) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), s)
}

// fakeEvents is an event source whose streams the test feeds.
type fakeEvents struct {
	mu        sync.Mutex
	supported bool
	openErr   error
	opens     int
	streams   chan *fakeStream
}

func (f *fakeEvents) SupportsEvents() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.supported
}

func (f *fakeEvents) ContainerEvents(ctx context.Context) (EventStream, error) {
	f.mu.Lock()
	f.opens++
	err := f.openErr
	f.mu.Unlock()
	if err != nil {
		return nil, err
	}
	select {
	case s := <-f.streams:
		s.ctx = ctx
		return s, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// fakeStream delivers the events sent on it; closing events ends it with io.EOF.
type fakeStream struct {
	ctx    context.Context
	events chan *runtimeapi.ContainerEventResponse
}

func (s *fakeStream) Recv() (*runtimeapi.ContainerEventResponse, error) {
	select {
	case e, ok := <-s.events:
		if !ok {
			return nil, io.EOF
		}
		return e, nil
	case <-s.ctx.Done():
		return nil, s.ctx.Err()
	}
}

// eventStatus turns an event into a status the way a runtime manager would.
type eventStatus struct{ err error }

func (g eventStatus) GeneratePodStatus(e *runtimeapi.ContainerEventResponse) (*container.PodStatus, error) {
	if g.err != nil {
		return nil, g.err
	}
	sb := e.GetPodSandboxStatus()
	s := &container.PodStatus{UID: types.UID(sb.GetMetadata().GetUid()), Name: sb.GetMetadata().GetName(), Namespace: sb.GetMetadata().GetNamespace()}
	state := container.SandboxNotReady
	if sb.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
		state = container.SandboxReady
	}
	s.Sandboxes = []*container.SandboxStatus{{ID: sb.GetId(), State: state}}
	for _, c := range e.GetContainersStatuses() {
		cs := &container.ContainerStatus{ID: c.GetId(), Name: c.GetMetadata().GetName(), ExitCode: c.GetExitCode()}
		switch c.GetState() {
		case runtimeapi.ContainerState_CONTAINER_RUNNING:
			cs.State = container.StateRunning
		case runtimeapi.ContainerState_CONTAINER_EXITED:
			cs.State = container.StateExited
		case runtimeapi.ContainerState_CONTAINER_CREATED:
			cs.State = container.StateCreated
		default:
			cs.State = container.StateUnknown
		}
		s.Containers = append(s.Containers, cs)
	}
	return s, nil
}
