package priority

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/evictionengine"
)

var now = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// pod started age ago; age < 0 means not started yet.
func pod(uid string, priority int32, age time.Duration) *typesv1.Pod {
	p := &typesv1.Pod{Uid: uid, Priority: priority, QosClass: "Burstable"}
	if age >= 0 {
		p.StartTime = timestamppb.New(now.Add(-age))
	}
	return p
}

func candidate(p *typesv1.Pod, hasStats bool, usage, request int64) evictionengine.Candidate {
	return evictionengine.Candidate{Pod: p, HasStats: hasStats, Usage: usage, Request: request}
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
		protect  time.Duration
		resource evictionengine.Resource
		in       []evictionengine.Candidate
		want     []string
	}{
		{
			name:     "lower priority first, whatever the usage",
			resource: evictionengine.ResourceMemory,
			in: []evictionengine.Candidate{
				candidate(pod("high-hog", 100, time.Hour), true, 8<<30, 0),
				candidate(pod("low-tiny", 0, time.Hour), true, 1, 1<<30),
			},
			want: []string{"low-tiny", "high-hog"},
		},
		{
			name:     "same priority: the youngest first; not started counts as youngest",
			resource: evictionengine.ResourceMemory,
			in: []evictionengine.Candidate{
				candidate(pod("day", 0, 24*time.Hour), true, 5<<30, 0),
				candidate(pod("minute", 0, time.Minute), true, 1, 0),
				candidate(pod("pending", 0, -1), true, 1, 0),
				candidate(pod("hour", 0, time.Hour), true, 1, 0),
			},
			want: []string{"pending", "minute", "hour", "day"},
		},
		{
			name:     "same priority and age: no stats, then most usage beyond the request",
			resource: evictionengine.ResourceEphemeralStorage,
			in: []evictionengine.Candidate{
				candidate(pod("small", 0, time.Hour), true, 200, 100),
				candidate(pod("big", 0, time.Hour), true, 900, 100),
				candidate(pod("unknown", 0, time.Hour), false, 0, 0),
			},
			want: []string{"unknown", "big", "small"},
		},
		{
			name:     "pids: the process count breaks ties",
			resource: evictionengine.ResourcePIDs,
			in: []evictionengine.Candidate{
				candidate(pod("few", 0, time.Hour), true, 3, 0),
				candidate(pod("many", 0, time.Hour), true, 300, 0),
			},
			want: []string{"many", "few"},
		},
		{
			name:     "protect_min_age: protected pods go only after every younger one, whatever their priority",
			protect:  time.Hour,
			resource: evictionengine.ResourceMemory,
			in: []evictionengine.Candidate{
				candidate(pod("old-low", -100, 2*time.Hour), true, 1, 0),
				candidate(pod("young-high", 500, 10*time.Minute), true, 1, 0),
				candidate(pod("exactly-an-hour", 0, time.Hour), true, 1, 0),
				candidate(pod("young-low", 0, 59*time.Minute), true, 1, 0),
				candidate(pod("pending", 1000, -1), true, 1, 0),
			},
			want: []string{"young-low", "young-high", "pending", "old-low", "exactly-an-hour"},
		},
	}
	for _, tt := range tests {
		cs := slices.Clone(tt.in)
		Policy{protectMinAge: tt.protect}.Rank(tt.resource, now, cs)
		if got := uids(cs); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestAdmit(t *testing.T) {
	memory := []string{evictionengine.ConditionMemoryPressure}
	evictable := []*typesv1.Pod{pod("old-low", -10, 2*time.Hour), pod("mid", 5, time.Minute)}
	tests := []struct {
		name      string
		protect   time.Duration
		ctx       evictionengine.AdmitContext
		wantAdmit bool
		wantMsg   string
	}{
		{
			name:      "no pressure",
			ctx:       evictionengine.AdmitContext{Pod: pod("new", -100, -1), Synchronized: true, Now: now, Evictable: evictable},
			wantAdmit: true,
		},
		{
			name:      "memory pressure, a lower-priority pod would go first",
			ctx:       evictionengine.AdmitContext{Pod: pod("new", 0, -1), Pressure: memory, Synchronized: true, Now: now, Evictable: evictable},
			wantAdmit: true,
		},
		{
			name: "memory pressure, the new pod would be the next to go",
			ctx:  evictionengine.AdmitContext{Pod: pod("new", -10, -1), Pressure: memory, Synchronized: true, Now: now, Evictable: evictable},
			wantMsg: "The node had condition: [MemoryPressure]. " +
				"No pod the node would evict has a priority below -10, so this pod would be evicted first. ",
		},
		{
			name:    "memory pressure, the only lower-priority pod is protected",
			protect: time.Hour,
			ctx:     evictionengine.AdmitContext{Pod: pod("new", 0, -1), Pressure: memory, Synchronized: true, Now: now, Evictable: evictable},
			wantMsg: "The node had condition: [MemoryPressure]. " +
				"No pod the node would evict has a priority below 0, so this pod would be evicted first. ",
		},
		{
			name: "memory pressure, nothing else to evict",
			ctx:  evictionengine.AdmitContext{Pod: pod("new", 1000, -1), Pressure: memory, Synchronized: true, Now: now},
			wantMsg: "The node had condition: [MemoryPressure]. " +
				"No pod the node would evict has a priority below 1000, so this pod would be evicted first. ",
		},
		{
			name:      "memory pressure before any Synchronize: the kubelet's rule",
			ctx:       evictionengine.AdmitContext{Pod: pod("new", -10, -1), Pressure: memory},
			wantAdmit: true,
		},
		{
			name:    "memory pressure rejects BestEffort as the kubelet does",
			ctx:     evictionengine.AdmitContext{Pod: &typesv1.Pod{QosClass: "BestEffort", Priority: 1000}, Pressure: memory, Synchronized: true, Now: now, Evictable: evictable},
			wantMsg: "The node had condition: [MemoryPressure]. ",
		},
		{
			name:      "a critical pod is always admitted",
			ctx:       evictionengine.AdmitContext{Pod: &typesv1.Pod{Critical: true, Priority: -100}, Pressure: memory, Synchronized: true, Now: now},
			wantAdmit: true,
		},
		{
			name:    "disk pressure rejects everyone else",
			ctx:     evictionengine.AdmitContext{Pod: pod("new", 1000, -1), Pressure: []string{evictionengine.ConditionDiskPressure}, Synchronized: true, Now: now, Evictable: evictable},
			wantMsg: "The node had condition: [DiskPressure]. ",
		},
	}
	for _, tt := range tests {
		got := Policy{protectMinAge: tt.protect}.Admit(tt.ctx)
		if got.Admit != tt.wantAdmit || got.Message != tt.wantMsg {
			t.Errorf("%s: got %+v, want admit %v message %q", tt.name, got, tt.wantAdmit, tt.wantMsg)
		}
	}
}

func TestConfig(t *testing.T) {
	var cfg Config
	cfg.SetDefaults()
	if err := cfg.Validate(); err != nil {
		t.Fatalf("defaults rejected: %v", err)
	}
	cfg.ProtectMinAge = sdk.Duration{Duration: time.Hour}
	e, err := New(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(e.Thresholds()) != 5 {
		t.Errorf("thresholds = %v, want the kubelet's defaults", e.Thresholds())
	}

	cfg.ProtectMinAge = sdk.Duration{Duration: -time.Minute}
	cfg.Hard = []string{"memory.available>1Gi"}
	var errs sdk.ConfigErrors
	if err := cfg.Validate(); !errors.As(err, &errs) || len(errs) != 2 ||
		errs[0].Path != "hard" || errs[1].Path != "protect_min_age" || !strings.Contains(errs[1].Message, "got -1m0s") {
		t.Errorf("Validate() = %v, want the hard entry and protect_min_age both reported", err)
	}
}
