package pleg

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// eventually waits for cond, failing the test if it does not hold within
// a generous bound. It is a wait, not a timing assertion.
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

// run starts Run and stops it when the test ends.
func (h *harness) run(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.pleg.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

func (h *harness) listCalls() int {
	h.runtime.mu.Lock()
	defer h.runtime.mu.Unlock()
	return h.runtime.listCalls
}

func (f *fakeEvents) openCount() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.opens
}

func containerEvent(kind runtimeapi.ContainerEventType, id string, createdAt time.Time, containers ...*runtimeapi.ContainerStatus) *runtimeapi.ContainerEventResponse {
	return &runtimeapi.ContainerEventResponse{
		ContainerId:        id,
		ContainerEventType: kind,
		CreatedAt:          createdAt.UnixNano(),
		PodSandboxStatus: &runtimeapi.PodSandboxStatus{
			Id:       "sb",
			State:    runtimeapi.PodSandboxState_SANDBOX_READY,
			Metadata: &runtimeapi.PodSandboxMetadata{Uid: "a", Name: "pod-a", Namespace: "default"},
		},
		ContainersStatuses: containers,
	}
}

func criContainer(id string, state runtimeapi.ContainerState) *runtimeapi.ContainerStatus {
	return &runtimeapi.ContainerStatus{Id: id, State: state, Metadata: &runtimeapi.ContainerMetadata{Name: "c-" + id}}
}

func TestUnsupportedEventsRelistWithOneLogLine(t *testing.T) {
	events := &fakeEvents{supported: false}
	h := newHarness(t, func(c *Config) { c.Events = events; c.EventStatus = eventStatus{} })
	h.runtime.setPods(pod("a", "sb", "c1=running"))
	h.run(t)
	<-h.pleg.Watch() // the first relist ran
	if h.pleg.Evented() {
		t.Error("Evented() with a runtime that has no event stream")
	}
	if n := h.logs.count("does not stream container events"); n != 1 {
		t.Errorf("%d log lines about the missing event stream; want exactly 1", n)
	}
	if n := events.openCount(); n != 0 {
		t.Errorf("opened the event stream %d times; want never", n)
	}
	if got := h.pleg.current.Load().threshold; got != DefaultRelistThreshold {
		t.Errorf("health threshold %v; want the generic %v", got, DefaultRelistThreshold)
	}
}

func TestEventsUpdateCacheAndEmit(t *testing.T) {
	stream := &fakeStream{events: make(chan *runtimeapi.ContainerEventResponse)}
	events := &fakeEvents{supported: true, streams: make(chan *fakeStream, 1)}
	events.streams <- stream
	h := newHarness(t, func(c *Config) { c.Events = events; c.EventStatus = eventStatus{} })
	h.run(t)
	eventually(t, "the event stream to open", func() bool { return events.openCount() == 1 })
	if !h.pleg.Evented() {
		t.Fatal("events are not in use with a runtime that streams them")
	}
	if got := h.pleg.current.Load(); got.period != EventedRelistPeriod || got.threshold != EventedRelistThreshold {
		t.Errorf("relist period/threshold %v/%v; want %v/%v while events are in use", got.period, got.threshold, EventedRelistPeriod, EventedRelistThreshold)
	}
	next := func() string {
		e := <-h.pleg.Watch()
		return string(e.ID) + ":" + string(e.Type) + ":" + e.Data
	}

	at := t0.Add(time.Second)
	stream.events <- containerEvent(runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT, "c1", at,
		criContainer("c1", runtimeapi.ContainerState_CONTAINER_RUNNING))
	if got := next(); got != "a:ContainerStarted:c1" {
		t.Fatalf("event %s; want a:ContainerStarted:c1", got)
	}
	if s, _, ok := h.fresh("a", at.Add(-time.Nanosecond)); !ok || s.Container("c-c1") == nil {
		t.Fatalf("cache after the started event: %+v, fresh=%v; want c1, fresh as of the event's time", s, ok)
	}

	// A created container refreshes the cache without an event.
	stream.events <- containerEvent(runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT, "c2", at.Add(time.Second),
		criContainer("c1", runtimeapi.ContainerState_CONTAINER_RUNNING), criContainer("c2", runtimeapi.ContainerState_CONTAINER_CREATED))
	// An event older than the cache is dropped.
	stream.events <- containerEvent(runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, "c1", at.Add(-time.Second))
	// An event without its sandbox is ignored.
	stream.events <- &runtimeapi.ContainerEventResponse{ContainerId: "c9", ContainerEventType: runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT}
	stream.events <- containerEvent(runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, "c1", at.Add(2*time.Second),
		criContainer("c1", runtimeapi.ContainerState_CONTAINER_EXITED), criContainer("c2", runtimeapi.ContainerState_CONTAINER_CREATED))
	if got := next(); got != "a:ContainerDied:c1" {
		t.Fatalf("event %s; want a:ContainerDied:c1 and nothing for the created, stale and sandbox-less events", got)
	}
	if s, _ := h.cache.Get("a"); s.Container("c-c2") == nil || s.Container("c-c1").State != "exited" {
		t.Errorf("cache after the stopped event: %+v", s)
	}
	if h.logs.count("container event without a pod sandbox status") != 1 {
		t.Error("the event without a sandbox was not logged")
	}

	// The sandbox's removal removes the pod from the cache.
	stream.events <- containerEvent(runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT, "sb", at.Add(3*time.Second))
	if got := []string{next(), next()}; !slices.Equal(got, []string{"a:ContainerDied:sb", "a:ContainerRemoved:sb"}) {
		t.Fatalf("events %v; want the sandbox died and removed", got)
	}
	if s, _ := h.cache.Get("a"); len(s.Containers) != 0 {
		t.Errorf("the pod is still cached after its sandbox was removed: %+v", s)
	}
	if got := testutil.ToFloat64(h.pleg.metrics.eventedConn); got != 1 {
		t.Errorf("kubelet_evented_pleg_connection_success_count = %v; want 1", got)
	}
}

func TestFallBackAfterStreamFailures(t *testing.T) {
	events := &fakeEvents{supported: true, openErr: errors.New("rpc error: code = Unavailable")}
	h := newHarness(t, func(c *Config) { c.Events = events; c.EventStatus = eventStatus{} })
	h.run(t)
	eventually(t, "the fallback", func() bool { return h.logs.count("falling back to relisting") == 1 })
	if h.pleg.Evented() {
		t.Error("still evented after the fallback")
	}
	if n := events.openCount(); n != MaxStreamRetries {
		t.Errorf("opened the stream %d times; want %d", n, MaxStreamRetries)
	}
	if got := testutil.ToFloat64(h.pleg.metrics.eventedConnErr); got != MaxStreamRetries {
		t.Errorf("kubelet_evented_pleg_connection_error_count = %v; want %d", got, MaxStreamRetries)
	}
	// Each failure forces a relist, on top of the first one.
	if n := h.listCalls(); n < MaxStreamRetries+1 {
		t.Errorf("%d relists; want at least %d", n, MaxStreamRetries+1)
	}
	if got := h.pleg.current.Load(); got.period != DefaultRelistPeriod || got.threshold != DefaultRelistThreshold {
		t.Errorf("after the fallback relist period/threshold %v/%v; want the generic ones", got.period, got.threshold)
	}
	// The relist loop relists at the generic period again: a step of
	// the clock by that period brings the next relist.
	before := h.listCalls()
	eventually(t, "a relist at the generic period", func() bool {
		h.clock.Step(DefaultRelistPeriod)
		return h.listCalls() > before
	})
}

func TestFallBackWhenRuntimeStopsStreaming(t *testing.T) {
	stream := &fakeStream{events: make(chan *runtimeapi.ContainerEventResponse)}
	events := &fakeEvents{supported: true, streams: make(chan *fakeStream, 1)}
	events.streams <- stream
	h := newHarness(t, func(c *Config) { c.Events = events; c.EventStatus = eventStatus{} })
	h.run(t)
	eventually(t, "the event stream to open", func() bool { return events.openCount() == 1 })
	events.mu.Lock()
	events.supported = false
	events.mu.Unlock()
	close(stream.events)
	eventually(t, "the fallback", func() bool { return h.logs.count("no longer streams container events") == 1 })
	if n := events.openCount(); n != 1 {
		t.Errorf("opened the stream %d times; want no retry once the runtime stopped streaming", n)
	}
}

func TestEventedHealth(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Events = &fakeEvents{}; c.EventStatus = eventStatus{} })
	h.pleg.useEvents()
	h.pleg.Relist(context.Background())
	h.clock.Step(9 * time.Minute)
	if ok, err := h.pleg.Healthy(); !ok {
		t.Errorf("unhealthy 9 minutes after a relist while events are in use: %v", err)
	}
	h.clock.Step(2 * time.Minute)
	if ok, err := h.pleg.Healthy(); ok || !strings.HasSuffix(err.Error(), "threshold is 10m0s") {
		t.Errorf("Healthy() = %v, %v; want the evented threshold exceeded", ok, err)
	}

	h.clock.Step(-2 * time.Minute)
	for range ChannelCapacity {
		h.pleg.send(&PodLifecycleEvent{ID: "a", Type: ContainerStarted})
	}
	if ok, err := h.pleg.Healthy(); ok || err.Error() != "EventedPLEG: pleg event channel capacity is full with 1000 events" {
		t.Errorf("Healthy() = %v, %v; want the full channel reported", ok, err)
	}
}

func TestEventedRelistKeepsNewerEventStatus(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Events = &fakeEvents{}; c.EventStatus = eventStatus{} })
	h.pleg.useEvents()
	h.runtime.setPods(pod("a", "sb", "c1=running"))
	h.runtime.statusTime = t0.Add(time.Second)
	newer, _ := eventStatus{}.GeneratePodStatus(containerEvent(runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, "c1", t0,
		criContainer("c1", runtimeapi.ContainerState_CONTAINER_EXITED)))
	h.cache.Set("a", newer, nil, t0.Add(2*time.Second))

	h.pleg.Relist(context.Background())
	if got := h.drain(); len(got) != 0 {
		t.Errorf("a relist older than the cached event status delivered %v", got)
	}
	if s, _ := h.cache.Get("a"); s.Container("c-c1").State != "exited" {
		t.Errorf("the relist overwrote the newer status from the event: %+v", s.Container("c-c1"))
	}

	h.runtime.statusTime = t0.Add(3 * time.Second)
	h.pleg.Relist(context.Background())
	if got := h.drain(); !slices.Equal(got, []string{"a:ContainerStarted:c1", "a:ContainerStarted:sb"}) {
		t.Errorf("a newer relist delivered %v", got)
	}
}
