package evictionengine

import (
	"math"
	"slices"
	"testing"
	"time"

	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
)

func reclaimKinds(resp *evictionv1.SynchronizeResponse) []string {
	var out []string
	for _, r := range resp.GetReclaim() {
		out = append(out, r.GetKind().String()+" for "+r.GetSignal())
	}
	return out
}

func TestNodeLevelReclaimComesFirst(t *testing.T) {
	gc := func(signal string) []string {
		return []string{"RECLAIM_KIND_CONTAINER_GC for " + signal, "RECLAIM_KIND_IMAGE_GC for " + signal}
	}
	tests := []struct {
		name        string
		dedicated   bool
		edit        func(*node)
		wantReclaim []string
		wantEvict   bool
	}{
		{
			name:        "shared filesystem, nodefs pressure: container GC then image GC",
			edit:        func(n *node) { n.nodefsAvailable(5 * Gi) },
			wantReclaim: gc("nodefs.available"),
		},
		{
			name:        "shared filesystem, imagefs pressure: the same",
			edit:        func(n *node) { n.imagefsAvailable(5 * Gi) },
			wantReclaim: gc("imagefs.available"),
		},
		{
			name:      "dedicated imagefs, nodefs pressure: nothing to reclaim, pods go",
			dedicated: true,
			edit:      func(n *node) { n.nodefsAvailable(5 * Gi) },
			wantEvict: true,
		},
		{
			name:        "dedicated imagefs, imagefs pressure: container GC then image GC",
			dedicated:   true,
			edit:        func(n *node) { n.imagefsAvailable(5 * Gi) },
			wantReclaim: gc("imagefs.available"),
		},
		{
			name:        "dedicated imagefs, imagefs inodes: the same",
			dedicated:   true,
			edit:        func(n *node) { n.req.NodeStats.Runtime.ImageFs.InodesFree = u64(1000) },
			wantReclaim: gc("imagefs.inodesFree"),
		},
		{
			name:      "memory pressure: no node-level reclaim",
			edit:      func(n *node) { n.memoryWorkingSet(short) },
			wantEvict: true,
		},
		{
			name:      "memory goes before disk",
			edit:      func(n *node) { n.memoryWorkingSet(short).nodefsAvailable(5 * Gi) },
			wantEvict: true,
		},
		{
			name:      "pid pressure: no node-level reclaim",
			edit:      func(n *node) { n.req.NodeStats.Rlimit.NumOfRunningProcesses = i64(32700) },
			wantEvict: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t, func(c *Config) { c.Hard = append(c.Hard, "pid.available<100", "imagefs.inodesFree<5%") })
			n := newNode().pods(pod("a", 0)).stats(podStats("a", Gi))
			n.req.DedicatedImageFs = tt.dedicated
			tt.edit(n)
			resp := runCycle(t, e, n.req)
			if got := reclaimKinds(resp); !slices.Equal(got, tt.wantReclaim) {
				t.Errorf("reclaim = %q, want %q", got, tt.wantReclaim)
			}
			if got := len(resp.GetEvictions()) > 0; got != tt.wantEvict {
				t.Errorf("evictions = %v, want any: %v", evictedUIDs(resp), tt.wantEvict)
			}
			for _, r := range resp.GetReclaim() {
				if r.GetKind() == evictionv1.ReclaimKind_RECLAIM_KIND_IMAGE_GC && r.GetBytesToFree() != math.MaxUint64 {
					t.Errorf("image GC asked for %d bytes, want every unused image", r.GetBytesToFree())
				}
			}
		})
	}
}

func TestMemoryGoesFirst(t *testing.T) {
	// Disk comes first in the config, but memory is relieved first, and
	// without node-level reclaim.
	e := newEngine(t, func(c *Config) { c.Hard = []string{"nodefs.available<10%", "memory.available<100Mi"} })
	resp := runCycle(t, e, newNode().memoryWorkingSet(short).nodefsAvailable(5*Gi).pods(pod("a", 0)).req)
	if len(resp.GetReclaim()) != 0 || len(resp.GetEvictions()) != 1 || resp.GetEvictions()[0].GetSignal() != "memory.available" {
		t.Errorf("reclaim %q, evictions %v; want an eviction for memory.available", reclaimKinds(resp), resp.GetEvictions())
	}
}

// The core runs the reclaim, then asks again in the same cycle with
// `reclaimed` and fresh stats; only then do pods go, if they must.
func TestDecisionAfterReclaim(t *testing.T) {
	tests := []struct {
		name      string
		available int64
		wantEvict bool
	}{
		{"reclaim freed enough", 20 * Gi, false},
		{"back above the threshold but short of the minimum reclaim", 11 * Gi, true},
		{"still below the threshold", 5 * Gi, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEngine(t, func(c *Config) { c.MinimumReclaim = []string{"nodefs.available=2Gi"} })
			first := runCycle(t, e, newNode().nodefsAvailable(5*Gi).pods(pod("a", 0)).req)
			if len(first.GetReclaim()) == 0 || len(first.GetEvictions()) != 0 {
				t.Fatalf("first answer: reclaim %q, evictions %v; want reclaim only", reclaimKinds(first), evictedUIDs(first))
			}
			n := newNode().at(2 * time.Second).nodefsAvailable(tt.available).pods(pod("a", 0)).state(first.GetState())
			n.req.Reclaimed = []*evictionv1.ReclaimResult{
				{Kind: evictionv1.ReclaimKind_RECLAIM_KIND_CONTAINER_GC, BytesFreed: 1 << 30},
				{Kind: evictionv1.ReclaimKind_RECLAIM_KIND_IMAGE_GC, BytesFreed: 4 << 30},
			}
			second := runCycle(t, e, n.req)
			if len(second.GetReclaim()) != 0 {
				t.Errorf("asked for reclaim again after it ran: %q", reclaimKinds(second))
			}
			if got := len(second.GetEvictions()) > 0; got != tt.wantEvict {
				t.Errorf("evictions after reclaim = %v, want any: %v", evictedUIDs(second), tt.wantEvict)
			}
		})
	}
}
