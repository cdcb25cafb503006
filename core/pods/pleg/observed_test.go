package pleg

import (
	"context"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/runtime/container"
)

// A status the loop read after a start stands in for PLEG's own last
// listing of the pod in the first relist that lists the runtime after the
// read began, unless a container died or went away in it.
func TestRelistComparesWithObservedStatus(t *testing.T) {
	tests := []struct {
		name string
		// before is what the last relist listed; observed is the pod the
		// loop read; listed is what the relist lists; readAfterListing
		// makes the read begin at the relist's start rather than before.
		before, observed, listed *container.Pod
		readAfterListing         bool
		wantEvents               []string
		wantInspected            []types.UID
	}{
		{name: "the start the read saw", before: pod("a", "sb"), observed: pod("a", "sb", "c1=running"), listed: pod("a", "sb", "c1=running")},
		{name: "a container died after the read", before: pod("a", "sb"), observed: pod("a", "sb", "c1=running"), listed: pod("a", "sb", "c1=exited"),
			wantEvents: []string{"a:ContainerDied:c1"}, wantInspected: []types.UID{"a"}},
		{name: "the read saw a container die", before: pod("a", "sb", "c0=running"), observed: pod("a", "sb", "c0=exited", "c1=running"), listed: pod("a", "sb", "c0=exited", "c1=running"),
			wantEvents: []string{"a:ContainerDied:c0", "a:ContainerStarted:c1"}, wantInspected: []types.UID{"a"}},
		{name: "read after the listing began", before: pod("a", "sb"), observed: pod("a", "sb", "c1=running"), listed: pod("a", "sb", "c1=running"), readAfterListing: true,
			wantEvents: []string{"a:ContainerStarted:c1"}, wantInspected: []types.UID{"a"}},
		{name: "the pod is gone", before: pod("a", "sb"), observed: pod("a", "sb", "c1=running"), listed: nil,
			wantEvents: []string{"a:ContainerDied:sb", "a:ContainerRemoved:sb"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, nil)
			ctx := context.Background()
			h.runtime.setPods(tt.before)
			h.pleg.Relist(ctx)
			h.drain()
			h.runtime.takeInspected()

			h.clock.Step(time.Second)
			read := statusFromPod(tt.observed, "pod-a", "default")
			read.Timestamp = h.clock.Now().Add(-time.Millisecond)
			if tt.readAfterListing {
				read.Timestamp = h.clock.Now()
			}
			h.pleg.Observed(read)
			if tt.listed != nil {
				h.runtime.setPods(tt.listed)
			} else {
				h.runtime.setPods()
			}
			h.pleg.Relist(ctx)
			if got := h.drain(); !slices.Equal(got, tt.wantEvents) {
				t.Errorf("events %v, want %v", got, tt.wantEvents)
			}
			if got := h.runtime.takeInspected(); !slices.Equal(got, tt.wantInspected) {
				t.Errorf("inspected %v, want %v", got, tt.wantInspected)
			}

			// Taken or not, the observation is spent: the next relist of
			// an unchanged runtime sends nothing.
			h.clock.Step(time.Second)
			h.pleg.Relist(ctx)
			if got := h.drain(); len(got) != 0 {
				t.Errorf("the relist after sent %v, want nothing", got)
			}
		})
	}
}
