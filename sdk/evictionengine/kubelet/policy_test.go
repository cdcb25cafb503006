package kubelet

import (
	"slices"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk/evictionengine"
)

func candidate(uid string, priority int32, hasStats bool, usage, request int64) evictionengine.Candidate {
	return evictionengine.Candidate{Pod: &typesv1.Pod{Uid: uid, Priority: priority}, HasStats: hasStats, Usage: usage, Request: request}
}

func uids(cs []evictionengine.Candidate) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Pod.GetUid())
	}
	return out
}

func TestRank(t *testing.T) {
	tests := []struct {
		name     string
		resource evictionengine.Resource
		in       []evictionengine.Candidate
		want     []string
	}{
		{
			name:     "memory: over its request beats priority",
			resource: evictionengine.ResourceMemory,
			in:       []evictionengine.Candidate{candidate("low-under", -10, true, 100, 200), candidate("high-over", 1000, true, 300, 200)},
			want:     []string{"high-over", "low-under"},
		},
		{
			name:     "memory: among pods over their requests, lower priority first",
			resource: evictionengine.ResourceMemory,
			in:       []evictionengine.Candidate{candidate("high", 10, true, 5000, 100), candidate("low", 0, true, 300, 200)},
			want:     []string{"low", "high"},
		},
		{
			name:     "memory: same priority, most usage beyond the request first",
			resource: evictionengine.ResourceMemory,
			in:       []evictionengine.Candidate{candidate("by100", 0, true, 300, 200), candidate("by900", 0, true, 1000, 100), candidate("by0", 0, true, 0, 0)},
			want:     []string{"by900", "by100", "by0"},
		},
		{
			name:     "memory: BestEffort (no request) before Guaranteed within its request",
			resource: evictionengine.ResourceMemory,
			in:       []evictionengine.Candidate{candidate("guaranteed", 0, true, 500, 1000), candidate("besteffort", 0, true, 10, 0)},
			want:     []string{"besteffort", "guaranteed"},
		},
		{
			name:     "memory: a pod without stats goes first",
			resource: evictionengine.ResourceMemory,
			in:       []evictionengine.Candidate{candidate("big", 0, true, 5000, 0), candidate("unknown", 100, false, 0, 0)},
			want:     []string{"unknown", "big"},
		},
		{
			name:     "ephemeral storage: the same three keys",
			resource: evictionengine.ResourceEphemeralStorage,
			in:       []evictionengine.Candidate{candidate("under", 0, true, 10, 100), candidate("over-high", 5, true, 200, 100), candidate("over-low", 0, true, 150, 100)},
			want:     []string{"over-low", "over-high", "under"},
		},
		{
			name:     "inodes: any use exceeds the zero request",
			resource: evictionengine.ResourceInodes,
			in:       []evictionengine.Candidate{candidate("none", -1, true, 0, 0), candidate("some", 5, true, 10, 0), candidate("many", 5, true, 1000, 0)},
			want:     []string{"many", "some", "none"},
		},
		{
			name:     "pids: priority first, then most processes",
			resource: evictionengine.ResourcePIDs,
			in:       []evictionengine.Candidate{candidate("high-many", 10, true, 9000, 0), candidate("low-few", 0, true, 3, 0), candidate("low-many", 0, true, 300, 0)},
			want:     []string{"low-many", "low-few", "high-many"},
		},
	}
	for _, tt := range tests {
		cs := slices.Clone(tt.in)
		Policy{}.Rank(tt.resource, time.Time{}, cs)
		if got := uids(cs); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestAdmitIsUpstream(t *testing.T) {
	be := &typesv1.Pod{QosClass: "BestEffort"}
	bu := &typesv1.Pod{QosClass: "Burstable"}
	memory := []string{evictionengine.ConditionMemoryPressure}
	if (Policy{}).Admit(evictionengine.AdmitContext{Pod: be, Pressure: memory}).Admit {
		t.Error("BestEffort admitted under MemoryPressure")
	}
	if !(Policy{}).Admit(evictionengine.AdmitContext{Pod: bu, Pressure: memory}).Admit {
		t.Error("Burstable rejected under MemoryPressure")
	}
}

// A whole cycle under memory pressure: critical pods stay, the others come
// back in the kubelet's order with its messages.
func TestMemoryPressureCycle(t *testing.T) {
	cfg := evictionengine.Config{}
	cfg.SetDefaults()
	e, err := New(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	const Mi = 1 << 20
	u := func(v uint64) *uint64 { return &v }
	i := func(v int64) *int64 { return &v }
	mk := func(uid, qos string, priority int32, request int64, critical bool) *typesv1.Pod {
		p := &typesv1.Pod{Uid: uid, Name: uid, QosClass: qos, Priority: priority, Critical: critical, TerminationGracePeriodSeconds: 30,
			Containers: []*typesv1.Container{{Name: "c"}}}
		if request > 0 {
			p.Containers[0].Resources = &typesv1.Resources{Requests: &typesv1.ResourceList{MemoryBytes: i(request)}}
		}
		return p
	}
	st := func(uid string, ws uint64) *typesv1.PodStats {
		return &typesv1.PodStats{PodRef: &typesv1.PodReference{Uid: uid}, Memory: &typesv1.MemoryStats{WorkingSetBytes: u(ws)},
			Containers: []*typesv1.ContainerStats{{Name: "c", Memory: &typesv1.MemoryStats{WorkingSetBytes: u(ws)}}}}
	}
	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	req := &evictionv1.SynchronizeRequest{
		Now:       timestamppb.New(now),
		Node:      &typesv1.Node{Capacity: &typesv1.ResourceList{MemoryBytes: i(4096 * Mi)}},
		NodeStats: &typesv1.NodeStats{Memory: &typesv1.MemoryStats{Time: timestamppb.New(now), WorkingSetBytes: u(4046 * Mi)}},
		Pods: []*typesv1.Pod{
			mk("guaranteed", "Guaranteed", 0, 1024*Mi, false),
			mk("system", "Burstable", 2000000000, 0, true),
			mk("burst-over", "Burstable", 0, 256*Mi, false),
			mk("besteffort", "BestEffort", 0, 0, false),
			mk("burst-under", "Burstable", 0, 2048*Mi, false),
		},
		PodStats: []*typesv1.PodStats{
			st("guaranteed", 1000*Mi), st("system", 3000*Mi), st("burst-over", 512*Mi), st("besteffort", 100*Mi), st("burst-under", 1024*Mi),
		},
	}
	res, err := e.Synchronize(req)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, ev := range res.Response.GetEvictions() {
		got = append(got, ev.GetPodUid())
	}
	// Over their requests: burst-over (by 256Mi) and besteffort (by 100Mi);
	// then those within them, the one least within first.
	want := []string{"burst-over", "besteffort", "guaranteed", "burst-under"}
	if !slices.Equal(got, want) {
		t.Errorf("eviction order = %v, want %v", got, want)
	}
	first := res.Response.GetEvictions()[0]
	wantMsg := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. " +
		"Container c was using 512Mi, request is 256Mi, has larger consumption of memory. "
	if first.GetMessage() != wantMsg || first.GetGracePeriodSeconds() != 1 {
		t.Errorf("first eviction: %q, grace %d", first.GetMessage(), first.GetGracePeriodSeconds())
	}
}
