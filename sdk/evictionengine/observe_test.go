package evictionengine

import (
	"testing"
	"time"

	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

func TestObserve(t *testing.T) {
	tests := []struct {
		name string
		edit func(n *node)
		want observations
	}{
		{
			name: "every signal from a complete request",
			edit: func(n *node) {
				n.stats(podStats("a", 1*Gi), podStats("b", 512*Mi))
			},
			want: observations{
				SignalMemoryAvailable:            {available: 6 * Gi, capacity: 8 * Gi, time: t0},
				SignalAllocatableMemoryAvailable: {available: 7*Gi - 1536*Mi, capacity: 7 * Gi, time: t0},
				SignalNodeFsAvailable:            {available: 50 * Gi, capacity: 100 * Gi, time: t0},
				SignalNodeFsInodesFree:           {available: 500000, capacity: 1000000, time: t0},
				SignalImageFsAvailable:           {available: 50 * Gi, capacity: 100 * Gi, time: t0},
				SignalImageFsInodesFree:          {available: 500000, capacity: 1000000, time: t0},
				SignalPIDAvailable:               {available: 32768 - 300, capacity: 32768, time: t0},
			},
		},
		{
			// Upstream's "pods" system container: what no listed pod owns
			// (a deleted pod's active page cache) counts too.
			name: "allocatable memory from the pods cgroup when the stats carry it",
			edit: func(n *node) {
				n.stats(podStats("a", 1*Gi), podStats("b", 512*Mi)).podsCgroup(3*Gi, 2*Gi)
				n.req.NodeStats.Fs, n.req.NodeStats.Runtime, n.req.NodeStats.Rlimit = nil, nil, nil
			},
			want: observations{
				SignalMemoryAvailable:            {available: 6 * Gi, capacity: 8 * Gi, time: t0},
				SignalAllocatableMemoryAvailable: {available: 5 * Gi, capacity: 7 * Gi, time: t0},
			},
		},
		{
			name: "memory capacity from the summary's available bytes when the node gives none",
			edit: func(n *node) {
				n.req.Node = nil
				n.req.NodeStats.Memory.AvailableBytes = u64(6 * Gi)
				n.req.NodeStats.Fs, n.req.NodeStats.Runtime, n.req.NodeStats.Rlimit = nil, nil, nil
			},
			want: observations{SignalMemoryAvailable: {available: 6 * Gi, capacity: 8 * Gi, time: t0}},
		},
		{
			name: "missing or partial stats give no signal, and over-full usage goes negative",
			edit: func(n *node) {
				n.req.Node.Allocatable = nil
				n.memoryWorkingSet(9 * Gi)
				n.req.NodeStats.Memory.Time = nil
				n.req.NodeStats.Fs = &typesv1.FsStats{AvailableBytes: u64(1)}
				n.req.NodeStats.Runtime = &typesv1.RuntimeStats{}
				n.req.NodeStats.Rlimit = &typesv1.RlimitStats{MaxPid: i64(100)}
			},
			want: observations{SignalMemoryAvailable: {available: -1 * Gi, capacity: 8 * Gi}},
		},
		{
			name: "nothing at all",
			edit: func(n *node) { n.req.Node, n.req.NodeStats = nil, nil },
			want: observations{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := newNode()
			tt.edit(n)
			got := observe(n.req)
			if len(got) != len(tt.want) {
				t.Errorf("observed %d signals %v, want %d %v", len(got), got, len(tt.want), tt.want)
			}
			for s, want := range tt.want {
				if g, ok := got[s]; !ok || g.available != want.available || g.capacity != want.capacity || !g.time.Equal(want.time) {
					t.Errorf("%s = %+v (observed %v), want %+v", s, g, ok, want)
				}
			}
		})
	}
}

func TestThresholdMet(t *testing.T) {
	half := Value{Percentage: 0.5, text: "50%"}
	tests := []struct {
		name      string
		threshold Threshold
		obs       observation
		enforce   bool
		want      bool
	}{
		{"below a quantity", Threshold{Value: Value{Quantity: 100}}, observation{available: 99}, false, true},
		{"at a quantity is not below it", Threshold{Value: Value{Quantity: 100}}, observation{available: 100}, false, false},
		{"below a percentage", Threshold{Value: half}, observation{available: 49, capacity: 100}, false, true},
		{"above the threshold, under threshold+reclaim, reclaim not enforced", Threshold{Value: Value{Quantity: 100}, MinReclaim: &Value{Quantity: 50}}, observation{available: 120}, false, false},
		{"above the threshold, under threshold+reclaim, reclaim enforced", Threshold{Value: Value{Quantity: 100}, MinReclaim: &Value{Quantity: 50}}, observation{available: 120}, true, true},
		{"percentage reclaim enforced", Threshold{Value: half, MinReclaim: &Value{Percentage: 0.1}}, observation{available: 59, capacity: 100}, true, true},
		{"reclaim met", Threshold{Value: Value{Quantity: 100}, MinReclaim: &Value{Quantity: 50}}, observation{available: 150}, true, false},
	}
	for _, tt := range tests {
		if got := tt.threshold.met(tt.obs, tt.enforce); got != tt.want {
			t.Errorf("%s: met = %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestTimeOfIgnoresInvalidTimestamps(t *testing.T) {
	if got := timeOf(nil); !got.IsZero() {
		t.Errorf("timeOf(nil) = %v, want zero", got)
	}
	if got := timeOf(ts(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))); !got.IsZero() {
		t.Errorf("timeOf(year 10000) = %v, want zero", got)
	}
	if got := timeOf(ts(t0)); !got.Equal(t0) {
		t.Errorf("timeOf(t0) = %v", got)
	}
}
