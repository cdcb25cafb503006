package pleg

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/runtime/container"
)

// A relist that sees a pod change sends the change's events whatever the
// cache holds, and reads the pod from the runtime unless the cache
// already holds a status showing exactly what it lists (the sync loop's
// read after a start).
func TestRelistReusesACachedStatusThatShowsTheListing(t *testing.T) {
	readErr := errors.New("container status: deadline exceeded")
	tests := []struct {
		name string
		// before is what the previous relist listed and read; cached, if
		// set, is the status the sync loop read and cached since, or
		// cachedErr its failure; listed is what this relist lists.
		before, cached, listed *container.Pod
		cachedErr              error
		wantEvents             []string
		wantInspected          []types.UID
	}{
		{name: "the loop read the start: event kept, read skipped", before: pod("a", "sb"), cached: pod("a", "sb", "c1=running"),
			listed: pod("a", "sb", "c1=running"), wantEvents: []string{"a:ContainerStarted:c1"}},
		{name: "a new pod read whole by the loop", before: nil, cached: pod("a", "sb", "c1=running"),
			listed: pod("a", "sb", "c1=running"), wantEvents: []string{"a:ContainerStarted:c1", "a:ContainerStarted:sb"}},
		{name: "created and unknown compare alike", before: pod("a", "sb"), cached: pod("a", "sb", "c1=created"),
			listed: pod("a", "sb", "c1=unknown")},
		{name: "nothing read since the last relist", before: pod("a", "sb"),
			listed: pod("a", "sb", "c1=running"), wantEvents: []string{"a:ContainerStarted:c1"}, wantInspected: []types.UID{"a"}},
		{name: "a container died after the read", before: pod("a", "sb"), cached: pod("a", "sb", "c1=running"),
			listed: pod("a", "sb", "c1=exited"), wantEvents: []string{"a:ContainerDied:c1"}, wantInspected: []types.UID{"a"}},
		{name: "a container started after the read", before: pod("a", "sb"), cached: pod("a", "sb", "c1=running"),
			listed: pod("a", "sb", "c1=running", "c2=running"), wantEvents: []string{"a:ContainerStarted:c1", "a:ContainerStarted:c2"}, wantInspected: []types.UID{"a"}},
		{name: "a container removed after the read", before: pod("a", "sb", "c0=exited"), cached: pod("a", "sb", "c0=exited", "c1=running"),
			listed: pod("a", "sb", "c1=running"), wantEvents: []string{"a:ContainerRemoved:c0", "a:ContainerStarted:c1"}, wantInspected: []types.UID{"a"}},
		{name: "the sandbox stopped after the read", before: pod("a", "sb", "c1=exited"), cached: pod("a", "sb", "c1=exited"),
			listed: pod("a", "sb=notready", "c1=exited"), wantEvents: []string{"a:ContainerDied:sb"}, wantInspected: []types.UID{"a"}},
		{name: "the read failed", before: pod("a", "sb"), cachedErr: readErr,
			listed: pod("a", "sb", "c1=running"), wantEvents: []string{"a:ContainerStarted:c1"}, wantInspected: []types.UID{"a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			ctx := context.Background()
			if tt.before != nil {
				h.runtime.setPods(tt.before)
				h.pleg.Relist(ctx)
				h.drain()
				h.runtime.takeInspected()
			}

			h.clock.Step(time.Second)
			var cached *container.PodStatus
			switch {
			case tt.cached != nil:
				cached = statusFromPod(tt.cached, "pod-a", "default")
				h.cache.Set("a", cached, nil, h.clock.Now())
			case tt.cachedErr != nil:
				h.cache.Set("a", nil, tt.cachedErr, h.clock.Now())
			}
			h.clock.Step(time.Second)
			start := h.clock.Now()
			h.runtime.setPods(tt.listed)
			h.pleg.Relist(ctx)

			if got := h.drain(); !slices.Equal(got, tt.wantEvents) {
				t.Errorf("events %v, want %v", got, tt.wantEvents)
			}
			if got := h.runtime.takeInspected(); !slices.Equal(got, tt.wantInspected) {
				t.Errorf("read from the runtime: %v, want %v", got, tt.wantInspected)
			}
			got, err, fresh := h.fresh("a", start.Add(-time.Nanosecond))
			if !fresh || err != nil || !listedAs(got, tt.listed) {
				t.Errorf("cache after the relist: %+v, %v, fresh as of its start %v; want a status showing %+v", got, err, fresh, tt.listed)
			}
			if tt.wantInspected == nil && got != cached && cached != nil {
				t.Errorf("the cache holds %+v, not the status the loop read", got)
			}

			// The relist moved on: the next one, of an unchanged
			// runtime, reads and sends nothing.
			expectQuietRelist(t, h)
		})
	}
}

// A relist whose read of a pod loses to a later read the sync loop cached
// first still sends the pod's events at once when that later read shows
// what the relist lists, instead of reading the pod again on the next.
func TestRelistReadOvertakenByTheLoopsRead(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	h.runtime.setPods(pod("a", "sb"))
	h.pleg.Relist(ctx)
	h.drain()
	h.runtime.takeInspected()

	h.clock.Step(time.Second)
	h.runtime.setPods(pod("a", "sb", "c1=running"))
	loops := statusFromPod(pod("a", "sb", "c1=running"), "pod-a", "default")
	relistWhileReading(h, "a", func() {
		h.cache.Set("a", loops, nil, h.clock.Now().Add(time.Millisecond))
	})

	if got, want := h.drain(), []string{"a:ContainerStarted:c1"}; !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
	if got, _ := h.cache.Get("a"); got != loops {
		t.Errorf("the cache holds %+v, not the newer status the loop read", got)
	}
	h.runtime.takeInspected()
	expectQuietRelist(t, h)
}

// relistWhileReading runs a relist and, while it reads pod uid's status,
// does meanwhile; it returns once the relist has ended.
func relistWhileReading(h *harness, uid types.UID, meanwhile func()) {
	release := h.runtime.block(uid)
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.pleg.Relist(context.Background())
	}()
	<-h.runtime.entered
	meanwhile()
	release()
	<-done
}

// expectQuietRelist runs the next relist, a second later, of a runtime
// that has not changed: it sends and reads nothing.
func expectQuietRelist(t *testing.T, h *harness) {
	t.Helper()
	h.clock.Step(time.Second)
	h.pleg.Relist(context.Background())
	if got := h.drain(); len(got) != 0 {
		t.Errorf("the relist after sent %v, want nothing", got)
	}
	if got := h.runtime.takeInspected(); len(got) != 0 {
		t.Errorf("the relist after read %v, want nothing", got)
	}
}

// A relist reads the sandboxes and containers it listed, not what the pod
// has by the time of the read, and dates the status at the listing: a
// container made after the listing is neither in the cached status nor
// hidden by a date after its making; the next relist lists and reads it.
func TestRelistReadsWhatItListed(t *testing.T) {
	h := newHarness(t, nil)
	ctx := context.Background()
	h.runtime.setPods(pod("a", "sb"))
	h.pleg.Relist(ctx)
	h.drain()

	h.clock.Step(time.Second)
	start := h.clock.Now()
	h.runtime.setPods(pod("a", "sb", "c1=running"))
	var made time.Time
	relistWhileReading(h, "a", func() {
		// The pod's worker starts another container while the relist reads.
		h.clock.Step(time.Millisecond)
		made = h.clock.Now()
		h.runtime.setPods(pod("a", "sb", "c1=running", "c2=running"))
	})

	if got, want := h.drain(), []string{"a:ContainerStarted:c1"}; !slices.Equal(got, want) {
		t.Errorf("events %v, want %v", got, want)
	}
	got, _ := h.cache.Get("a")
	if !listedAs(got, pod("a", "sb", "c1=running")) {
		t.Errorf("cached %+v, want what the relist listed", got)
	}
	if _, _, fresh := h.fresh("a", made); fresh {
		t.Error("the status read in the relist counts as newer than a container made after its listing")
	}
	if _, _, fresh := h.fresh("a", start.Add(-time.Nanosecond)); !fresh {
		t.Error("the status read in the relist is not fresh as of its listing")
	}

	h.clock.Step(time.Second)
	h.pleg.Relist(ctx)
	if got, want := h.drain(), []string{"a:ContainerStarted:c2"}; !slices.Equal(got, want) {
		t.Errorf("the next relist sent %v, want %v", got, want)
	}
	if got, _ := h.cache.Get("a"); !listedAs(got, pod("a", "sb", "c1=running", "c2=running")) {
		t.Errorf("cached %+v after the next relist, want both containers", got)
	}
}
