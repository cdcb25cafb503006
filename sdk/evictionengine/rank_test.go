package evictionengine

import (
	"slices"
	"testing"
)

func candidate(uid string, priority int32, hasStats bool, usage, request int64) Candidate {
	return Candidate{Pod: pod(uid, priority), HasStats: hasStats, Usage: usage, Request: request}
}

func uids(cs []Candidate) []string {
	var out []string
	for _, c := range cs {
		out = append(out, c.Pod.GetUid())
	}
	return out
}

func TestRankingKeys(t *testing.T) {
	tests := []struct {
		name string
		keys []Compare
		in   []Candidate
		want []string
	}{
		{
			name: "priority: lower first",
			keys: []Compare{ByPriority},
			in:   []Candidate{candidate("high", 100, true, 0, 0), candidate("low", -5, true, 0, 0), candidate("mid", 0, true, 0, 0)},
			want: []string{"low", "mid", "high"},
		},
		{
			name: "exceeds request: over first, no stats before both",
			keys: []Compare{ByExceedsRequest},
			in:   []Candidate{candidate("under", 0, true, 50, 100), candidate("over", 0, true, 150, 100), candidate("unknown", 0, false, 0, 0), candidate("equal", 0, true, 100, 100)},
			want: []string{"unknown", "over", "under", "equal"},
		},
		{
			name: "usage above request: largest first, no stats first",
			keys: []Compare{ByUsageAboveRequest},
			in:   []Candidate{candidate("small", 0, true, 300, 200), candidate("big", 0, true, 1000, 100), candidate("unknown", 0, false, 0, 0), candidate("under", 0, true, 0, 500)},
			want: []string{"unknown", "big", "small", "under"},
		},
		{
			name: "usage: largest first",
			keys: []Compare{ByUsage},
			in:   []Candidate{candidate("few", 0, true, 3, 0), candidate("many", 0, true, 300, 0), candidate("unknown", 0, false, 0, 0)},
			want: []string{"unknown", "many", "few"},
		},
		{
			name: "keys in order, ties keep the request's order",
			keys: []Compare{ByPriority, ByUsage},
			in: []Candidate{candidate("a", 1, true, 10, 0), candidate("b", 0, true, 5, 0), candidate("c", 0, true, 5, 0),
				candidate("d", 0, true, 50, 0), candidate("e", 1, true, 10, 0)},
			want: []string{"d", "b", "c", "a", "e"},
		},
	}
	for _, tt := range tests {
		cs := slices.Clone(tt.in)
		SortBy(cs, tt.keys...)
		if got := uids(cs); !slices.Equal(got, tt.want) {
			t.Errorf("%s: %v, want %v", tt.name, got, tt.want)
		}
	}
}
