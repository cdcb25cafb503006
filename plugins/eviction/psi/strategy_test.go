package psi

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func psiOf(someAvg10, fullAvg10 float64, someTotal uint64) *typesv1.PSIStats {
	return &typesv1.PSIStats{Some: &typesv1.PSIData{Avg10: someAvg10, Total: someTotal}, Full: &typesv1.PSIData{Avg10: fullAvg10}}
}

func u64(v uint64) *uint64 { return &v }
func i64(v int64) *int64   { return &v }

// request has three pods: "small" within its 100-byte request, "big" far
// over its 10, "limited" with a memory limit of its own; psi is the node's,
// podPSI each pod's by UID.
func request(now time.Time, psi *typesv1.PSIStats, podPSI map[string]*typesv1.PSIStats, state []byte) *evictionv1.SynchronizeRequest {
	pod := func(uid string, request int64, limit *int64) *typesv1.Pod {
		return &typesv1.Pod{Uid: uid, Name: uid, Namespace: "default", Containers: []*typesv1.Container{{Name: "app",
			Resources: &typesv1.Resources{Requests: &typesv1.ResourceList{MemoryBytes: i64(request)}, Limits: &typesv1.ResourceList{MemoryBytes: limit}}}}}
	}
	stats := func(uid string, ws uint64) *typesv1.PodStats {
		return &typesv1.PodStats{PodRef: &typesv1.PodReference{Uid: uid, Name: uid, Namespace: "default"},
			Memory: &typesv1.MemoryStats{WorkingSetBytes: u64(ws), Psi: podPSI[uid]}}
	}
	return &evictionv1.SynchronizeRequest{
		Now:       timestamppb.New(now),
		NodeStats: &typesv1.NodeStats{Memory: &typesv1.MemoryStats{AvailableBytes: u64(1 << 40), WorkingSetBytes: u64(1 << 20), Psi: psi}},
		Node:      &typesv1.Node{Capacity: &typesv1.ResourceList{MemoryBytes: i64(1<<40 + 1<<20)}},
		Pods:      []*typesv1.Pod{pod("small", 100, nil), pod("big", 10, nil), pod("limited", 10, i64(1000))},
		PodStats:  []*typesv1.PodStats{stats("small", 50), stats("big", 500), stats("limited", 20)},
		State:     state,
	}
}

func strategy(t *testing.T, node, pods []string) *Strategy {
	t.Helper()
	var cfg Config
	cfg.SetDefaults()
	cfg.Hard = []string{}
	cfg.MemoryPressure, cfg.PodMemoryPressure = node, pods
	s, err := New(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestSynchronize(t *testing.T) {
	tests := []struct {
		name       string
		node, pods []string
		nodePSI    *typesv1.PSIStats
		podPSI     map[string]*typesv1.PSIStats
		wantFirst  string // "" for no eviction
		wantInMsg  string
	}{
		{name: "calm node: nobody", node: []string{"some.avg10>40"}, nodePSI: psiOf(10, 0, 0)},
		{name: "node some above its level: the kubelet's first choice", node: []string{"some.avg10>40"}, nodePSI: psiOf(41, 0, 0),
			wantFirst: "big", wantInMsg: "Node memory pressure some avg10 41.00% is above 40%"},
		{name: "at the level is not above it", node: []string{"some.avg10>40"}, nodePSI: psiOf(40, 0, 0)},
		{name: "full line", node: []string{"full.avg10>20"}, nodePSI: psiOf(0, 25, 0), wantFirst: "big", wantInMsg: "full avg10"},
		{name: "no PSI from the kernel: nobody", node: []string{"some.avg10>1"}, nodePSI: nil},
		{name: "a pod's stall", pods: []string{"some.avg10>5"}, podPSI: map[string]*typesv1.PSIStats{"small": psiOf(30, 0, 0)},
			wantFirst: "big", wantInMsg: "Pod default/small memory pressure some avg10 30.00% is above 5%"},
		{name: "a pod stalling against its own limit counts for nothing", pods: []string{"some.avg10>5"},
			podPSI: map[string]*typesv1.PSIStats{"limited": psiOf(90, 90, 0)}},
		{name: "pod levels do not read the node", pods: []string{"some.avg10>5"}, nodePSI: psiOf(90, 90, 0)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := strategy(t, tt.node, tt.pods).Synchronize(request(t0, tt.nodePSI, tt.podPSI, nil))
			if err != nil {
				t.Fatal(err)
			}
			ev := res.Response.GetEvictions()
			if tt.wantFirst == "" {
				if len(ev) != 0 {
					t.Fatalf("evictions %v, want none", ev)
				}
				return
			}
			if len(ev) == 0 || ev[0].GetPodUid() != tt.wantFirst {
				t.Fatalf("evictions %v, want %s first", ev, tt.wantFirst)
			}
			if ev[0].GetSignal() != Signal || ev[0].GetGracePeriodSeconds() != 1 {
				t.Errorf("signal %q grace %d, want %q and 1", ev[0].GetSignal(), ev[0].GetGracePeriodSeconds(), Signal)
			}
			if !strings.Contains(ev[0].GetMessage(), tt.wantInMsg) || !strings.HasPrefix(ev[0].GetMessage(), "The node was low on resource: memory. ") {
				t.Errorf("message %q, want the kubelet's prefix and %q", ev[0].GetMessage(), tt.wantInMsg)
			}
		})
	}
}

// After an eviction the averages still hold the old stall; within the
// window only a stall that went on since (by the totals) evicts again.
func TestOneStallEvictsOnce(t *testing.T) {
	s := strategy(t, []string{"some.avg10>40"}, nil)
	first, err := s.Synchronize(request(t0, psiOf(60, 0, 1_000_000), nil, nil))
	if err != nil || len(first.Response.GetEvictions()) == 0 {
		t.Fatalf("first cycle: %v, %v; want an eviction", first.Response.GetEvictions(), err)
	}
	state := first.Response.GetState()
	tests := []struct {
		name  string
		after time.Duration
		total uint64
		want  bool
	}{
		{"avg10 still high, no stall since", 2 * time.Second, 1_000_000, false},
		{"stalled 20% of the time since", 5 * time.Second, 2_000_000, false},
		{"stalled 60% of the time since", 5 * time.Second, 4_000_000, true},
		{"a window later the average alone decides", 10 * time.Second, 1_000_000, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := s.Synchronize(request(t0.Add(tt.after), psiOf(50, 0, tt.total), nil, state))
			if err != nil {
				t.Fatal(err)
			}
			if got := len(res.Response.GetEvictions()) > 0; got != tt.want {
				t.Errorf("evicts: %t, want %t", got, tt.want)
			}
		})
	}
}

func TestKubeletSignalsComeFirstAndStateNests(t *testing.T) {
	var cfg Config
	cfg.SetDefaults()
	cfg.Hard = []string{"memory.available<2Ti"} // always met
	s, err := New(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	res, err := s.Synchronize(request(t0, psiOf(99, 99, 0), nil, nil))
	if err != nil {
		t.Fatal(err)
	}
	if ev := res.Response.GetEvictions(); len(ev) == 0 || ev[0].GetSignal() != "memory.available" {
		t.Fatalf("evictions %v, want the kubelet's memory.available first", ev)
	}
	var st state
	if err := json.Unmarshal(res.Response.GetState(), &st); err != nil || len(st.Engine) == 0 || st.Last != nil {
		t.Errorf("state %s: want the engine's state nested and no pressure eviction recorded (%v)", res.Response.GetState(), err)
	}
}

func TestNotifications(t *testing.T) {
	got := strategy(t, []string{"some.avg10>40"}, []string{"full.avg60>50"}).notifications(request(t0, nil, nil, nil))
	if len(got) != 2 || got[0].GetPods() || got[0].GetLine() != "some" || got[0].GetWindowSeconds() != 10 || got[0].GetPercent() != 40 ||
		!got[1].GetPods() || got[1].GetLine() != "full" || got[1].GetWindowSeconds() != 60 || got[1].GetPercent() != 50 {
		t.Errorf("notifications %v", got)
	}
	// "limited" stalls against its own limit: not watched.
	if uids := got[1].GetPodUids(); !slices.Equal(uids, []string{"small", "big"}) {
		t.Errorf("pods watched %v, want small and big", uids)
	}
}

func TestUnreadableStateStartsAfresh(t *testing.T) {
	res, err := strategy(t, []string{"some.avg10>40"}, nil).Synchronize(request(t0, psiOf(60, 0, 0), nil, []byte("{not json")))
	if err != nil || len(res.Warnings) == 0 || len(res.Response.GetEvictions()) == 0 {
		t.Errorf("warnings %v, evictions %v, error %v: want a warning and a decision", res.Warnings, res.Response.GetEvictions(), err)
	}
}

func TestConfig(t *testing.T) {
	tests := []struct {
		name       string
		node, pods []string
		wantErr    string
	}{
		{name: "defaults", node: DefaultMemoryPressure, pods: DefaultPodMemoryPressure},
		{name: "none", node: []string{}, pods: []string{}},
		{name: "every window", node: []string{"some.avg10>1", "some.avg60>2.5", "full.avg300>3"}},
		{name: "bad syntax", node: []string{"some.avg10<40"}, wantErr: `memory_pressure: "some.avg10<40": expected <some|full>.avg<10|60|300>><percent>`},
		{name: "bad window", pods: []string{"full.avg30>40"}, wantErr: "pod_memory_pressure"},
		{name: "out of range", node: []string{"some.avg10>100"}, wantErr: "above 0 and below 100"},
		{name: "twice", node: []string{"some.avg10>10", "some.avg10>20"}, wantErr: "listed twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfg Config
			cfg.SetDefaults()
			cfg.MemoryPressure, cfg.PodMemoryPressure = tt.node, tt.pods
			err := cfg.Validate()
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error %v, want one containing %q", err, tt.wantErr)
			}
		})
	}
}
