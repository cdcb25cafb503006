package pleg

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/runtime/container"
)

func TestComputeEvents(t *testing.T) {
	tests := []struct {
		name string
		old  *container.Pod
		now  *container.Pod
		want []string
	}{
		{"new pod", nil, pod("a", "sb", "c1=running", "c2=created"),
			[]string{"ContainerChanged:c2", "ContainerStarted:c1", "ContainerStarted:sb"}},
		{"unchanged", pod("a", "sb", "c1=running"), pod("a", "sb", "c1=running"), nil},
		{"container exits", pod("a", "sb", "c1=running"), pod("a", "sb", "c1=exited"), []string{"ContainerDied:c1"}},
		{"exited container removed", pod("a", "sb", "c1=exited"), pod("a", "sb"), []string{"ContainerRemoved:c1"}},
		{"running container vanishes", pod("a", "sb", "c1=running"), pod("a", "sb"), []string{"ContainerDied:c1", "ContainerRemoved:c1"}},
		{"created container starts", pod("a", "sb", "c1=created"), pod("a", "sb", "c1=running"), []string{"ContainerStarted:c1"}},
		{"container state unknown", pod("a", "sb", "c1=running"), pod("a", "sb", "c1=unknown"), []string{"ContainerChanged:c1"}},
		{"created counts as unknown", pod("a", "sb", "c1=unknown"), pod("a", "sb", "c1=created"), nil},
		{"restart: new instance", pod("a", "sb", "c1=exited"), pod("a", "sb", "c1=exited", "c2=running"), []string{"ContainerStarted:c2"}},
		{"sandbox stops", pod("a", "sb", "c1=exited"), pod("a", "sb=notready", "c1=exited"), []string{"ContainerDied:sb"}},
		{"pod gone", pod("a", "sb=notready", "c1=exited", "c2=running"), nil,
			[]string{"ContainerDied:c2", "ContainerRemoved:c1", "ContainerRemoved:c2", "ContainerRemoved:sb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, e := range computeEvents("a", tt.old, tt.now) {
				if e.ID != "a" {
					t.Errorf("event for pod %q; want a", e.ID)
				}
				got = append(got, string(e.Type)+":"+e.Data)
			}
			slices.Sort(got)
			if !slices.Equal(got, tt.want) {
				t.Errorf("events = %v; want %v", got, tt.want)
			}
		})
	}
}

func TestRelistEmitsEventsAndCaches(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()

	h.runtime.setPods(pod("a", "sb", "c1=running", "c2=created"), pod("b", "sb", "c3=running"))
	start := h.clock.Now()
	h.pleg.Relist(ctx)
	if got, want := h.drain(), []string{"a:ContainerStarted:c1", "a:ContainerStarted:sb", "b:ContainerStarted:c3", "b:ContainerStarted:sb"}; !slices.Equal(got, want) {
		t.Fatalf("first relist delivered %v; want %v (ContainerChanged is not delivered)", got, want)
	}
	for _, uid := range []types.UID{"a", "b"} {
		s, err := h.cache.Get(uid)
		if err != nil || s.UID != uid || len(s.Containers) == 0 {
			t.Errorf("cache for %s = %+v, %v; want the pod's status", uid, s, err)
		}
	}
	if s, _ := h.cache.Get("a"); s.Container("c-c2") == nil || s.Container("c-c2").State != container.StateCreated {
		t.Errorf("the created container is not in the cached status: %+v", s)
	}
	if _, _, ok := h.fresh("a", start.Add(-time.Nanosecond)); !ok {
		t.Error("the cache is not fresh as of the relist's start")
	}

	// Nothing changes: nothing is inspected, nothing is sent, but the
	// cache's freshness advances.
	h.runtime.takeInspected()
	h.clock.Step(time.Second)
	second := h.clock.Now()
	h.pleg.Relist(ctx)
	if got := h.drain(); len(got) != 0 {
		t.Errorf("unchanged relist delivered %v", got)
	}
	if got := h.runtime.takeInspected(); len(got) != 0 {
		t.Errorf("unchanged relist inspected %v", got)
	}
	if _, _, ok := h.fresh("b", second.Add(-time.Nanosecond)); !ok {
		t.Error("the cache's global timestamp did not advance")
	}

	// One pod's container dies, the other pod goes away entirely.
	h.runtime.setPods(pod("a", "sb", "c1=exited", "c2=running"))
	h.clock.Step(time.Second)
	h.pleg.Relist(ctx)
	if got, want := h.drain(), []string{"a:ContainerDied:c1", "a:ContainerStarted:c2", "b:ContainerDied:c3", "b:ContainerDied:sb", "b:ContainerRemoved:c3", "b:ContainerRemoved:sb"}; !slices.Equal(got, want) {
		t.Errorf("third relist delivered %v; want %v", got, want)
	}
	if got := h.runtime.takeInspected(); !slices.Equal(got, []types.UID{"a"}) {
		t.Errorf("inspected %v; want only the pod still on the runtime", got)
	}
	if s, _ := h.cache.Get("b"); len(s.Containers) != 0 {
		t.Errorf("the pod that left the runtime is still cached: %+v", s)
	}
}

func TestRelistRetriesFailedInspection(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	inspectErr := errors.New("rpc error: code = Unavailable")

	h.runtime.setPods(pod("a", "sb", "c1=running"), pod("b", "sb", "c2=running"))
	h.runtime.setStatusErr("a", inspectErr)
	start := h.clock.Now()
	h.pleg.Relist(ctx)
	if got, want := h.drain(), []string{"b:ContainerStarted:c2", "b:ContainerStarted:sb"}; !slices.Equal(got, want) {
		t.Fatalf("delivered %v; want only pod b's events while pod a cannot be read", got)
	}
	_, err, ok := h.fresh("a", start.Add(-time.Nanosecond))
	if !ok || !errors.Is(err, inspectErr) {
		t.Fatalf("cache for pod a: fresh=%v err=%v; want the inspection error, fresh, so that its worker backs off", ok, err)
	}
	if !strings.Contains(err.Error(), "default/pod-a") {
		t.Errorf("cached error %q does not name the pod", err)
	}

	// Nothing changed on the runtime, but pod a is read again and its
	// events, held back, are delivered now.
	h.runtime.setStatusErr("a", nil)
	h.runtime.takeInspected()
	h.clock.Step(time.Second)
	h.pleg.Relist(ctx)
	if got := h.runtime.takeInspected(); !slices.Equal(got, []types.UID{"a"}) {
		t.Errorf("inspected %v; want pod a retried", got)
	}
	if got, want := h.drain(), []string{"a:ContainerStarted:c1", "a:ContainerStarted:sb"}; !slices.Equal(got, want) {
		t.Errorf("retry delivered %v; want %v", got, want)
	}
	if s, err := h.cache.Get("a"); err != nil || len(s.Containers) != 1 {
		t.Errorf("cache for pod a after the retry = %+v, %v", s, err)
	}

	// Retried once it succeeded: not again.
	h.clock.Step(time.Second)
	h.pleg.Relist(ctx)
	if got := h.runtime.takeInspected(); len(got) != 0 {
		t.Errorf("inspected %v after a successful retry; want none", got)
	}
}

func TestRelistListFailureKeepsState(t *testing.T) {
	h := newHarness(t, nil)
	h.runtime.setPods(pod("a", "sb", "c1=running"))
	h.pleg.Relist(context.Background())
	h.drain()
	h.runtime.mu.Lock()
	h.runtime.listErr = errors.New("runtime down")
	h.runtime.mu.Unlock()
	h.clock.Step(time.Second)
	h.pleg.Relist(context.Background())
	if _, _, ok := h.fresh("a", h.clock.Now().Add(-time.Nanosecond)); ok {
		t.Error("a failed listing advanced the cache's freshness")
	}
	if h.logs.count("unable to list the runtime's pods") != 1 {
		t.Error("the listing failure was not logged")
	}
}

func TestSlowPodDoesNotStallOthers(t *testing.T) {
	h := newHarness(t, nil)
	h.runtime.setPods(pod("slow", "sb", "c1=running"), pod("fast", "sb", "c2=running"))
	release := h.runtime.block("slow")
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.pleg.Relist(context.Background())
	}()
	<-h.runtime.entered
	// While the slow pod is still being read, the fast pod's status is
	// cached and its events arrive.
	got := map[string]bool{}
	for len(got) < 2 {
		e := <-h.pleg.Watch()
		if e.ID != "fast" {
			t.Fatalf("event %+v for the slow pod before its status was read", e)
		}
		got[string(e.Type)+":"+e.Data] = true
	}
	if s, err := h.cache.Get("fast"); err != nil || len(s.Containers) != 1 {
		t.Errorf("fast pod not cached while the slow one is read: %+v, %v", s, err)
	}
	select {
	case <-done:
		t.Fatal("the relist ended before the slow pod was read")
	default:
	}
	release()
	<-done
	if got, want := h.drain(), []string{"slow:ContainerStarted:c1", "slow:ContainerStarted:sb"}; !slices.Equal(got, want) {
		t.Errorf("after release delivered %v; want %v", got, want)
	}
}

func TestHungPodTimesOut(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.InspectTimeout = 50 * time.Millisecond })
	h.runtime.setPods(pod("hung", "sb", "c1=running"))
	h.runtime.block("hung")
	h.pleg.Relist(context.Background())
	_, err := h.cache.Get("hung")
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("cache for the hung pod holds %v; want its deadline error", err)
	}
	if got := h.drain(); len(got) != 0 {
		t.Errorf("delivered %v for a pod that could not be read", got)
	}
	if _, ok := h.pleg.reinspect["hung"]; !ok {
		t.Error("the hung pod is not marked for another inspection")
	}
}

func TestDiscardedEventsAreCounted(t *testing.T) {
	h := newHarness(t, nil)
	items := []string{}
	for i := range ChannelCapacity + 5 {
		items = append(items, fmt.Sprintf("c%d=running", i))
	}
	h.runtime.setPods(pod("a", items...))
	h.pleg.Relist(context.Background())
	if got := testutil.ToFloat64(h.pleg.metrics.discardEvents); got != 5 {
		t.Errorf("kubelet_pleg_discard_events = %v; want 5", got)
	}
	if n := len(h.pleg.Watch()); n != ChannelCapacity {
		t.Errorf("%d events queued; want the channel full (%d)", n, ChannelCapacity)
	}
	if h.logs.count("the event channel is full") != 5 {
		t.Error("discarded events were not logged")
	}
}

func TestMetrics(t *testing.T) {
	h := newHarness(t, nil)
	h.runtime.setPods(pod("a", "sb", "c1=running", "c2=exited"), pod("b", "sb=notready", "c3=exited"))
	h.pleg.Relist(context.Background())
	h.clock.Step(2 * time.Second)
	h.runtime.setPods(pod("a", "sb", "c1=running"))
	h.pleg.Relist(context.Background())
	h.pleg.Healthy()

	want := `
# HELP kubelet_running_containers Number of containers currently running
# TYPE kubelet_running_containers gauge
kubelet_running_containers{container_state="created"} 0
kubelet_running_containers{container_state="exited"} 0
kubelet_running_containers{container_state="running"} 1
kubelet_running_containers{container_state="unknown"} 0
# HELP kubelet_running_pods Number of pods that have a running pod sandbox
# TYPE kubelet_running_pods gauge
kubelet_running_pods 1
`
	if err := testutil.GatherAndCompare(h.reg, strings.NewReader(want), "kubelet_running_containers", "kubelet_running_pods"); err != nil {
		t.Error(err)
	}
	if got := testutil.ToFloat64(h.pleg.metrics.lastSeen); got != float64(h.clock.Now().Unix()) {
		t.Errorf("kubelet_pleg_last_seen_seconds = %v; want the last relist's start %d", got, h.clock.Now().Unix())
	}
	families, err := h.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	samples := map[string]uint64{}
	for _, f := range families {
		if hist := f.GetMetric()[0].GetHistogram(); hist != nil {
			samples[f.GetName()] = hist.GetSampleCount()
		}
	}
	if got := samples["kubelet_pleg_relist_duration_seconds"]; got != 2 {
		t.Errorf("kubelet_pleg_relist_duration_seconds has %d samples; want 2 (one per relist)", got)
	}
	if got := samples["kubelet_pleg_relist_interval_seconds"]; got != 1 {
		t.Errorf("kubelet_pleg_relist_interval_seconds has %d samples; want 1 (between the two relists)", got)
	}
}

// RelistSoon relists without waiting for the period, which the fake clock
// here never lets pass.
func TestRelistSoon(t *testing.T) {
	h := newHarness(t, nil)
	h.run(t)
	eventually(t, "the first relist", func() bool { return h.listCalls() == 1 })
	h.pleg.RelistSoon()
	eventually(t, "a relist asked for", func() bool { return h.listCalls() == 2 })
}
