package summary

import (
	"testing"
	"time"
)

func TestCPURates(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	type reading struct {
		at    time.Duration // after t0
		usage uint64
		want  *uint64
	}
	tests := []struct {
		name     string
		readings []reading
	}{
		{"the first reading has no rate", []reading{{0, 5e9, nil}}},
		{"the rate is the average since the kept reading", []reading{
			{0, 1e9, nil},
			{2 * time.Second, 2e9, ptr(uint64(5e8))},
			{12 * time.Second, 12e9, ptr(uint64(1e9))},
		}},
		{"a reading within the minimum window answers the last rate and is not kept", []reading{
			{0, 0, nil},
			{time.Second, 1e9, ptr(uint64(1e9))},
			{1500 * time.Millisecond, 1e9, ptr(uint64(1e9))},
			// Measured from the reading at 1s, not the one at 1.5s.
			{3 * time.Second, 2e9, ptr(uint64(5e8))},
		}},
		{"a reading within the window before any rate has none", []reading{{0, 0, nil}, {100 * time.Millisecond, 1e6, nil}}},
		{"a counter that goes backwards starts over", []reading{
			{0, 9e9, nil},
			{2 * time.Second, 1e9, nil},
			{4 * time.Second, 3e9, ptr(uint64(1e9))},
		}},
		{"an idle cgroup has rate 0", []reading{{0, 7, nil}, {5 * time.Second, 7, ptr(uint64(0))}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewCPURates()
			for i, rd := range tt.readings {
				got := r.Rate("k", t0.Add(rd.at), rd.usage)
				if !equalPtr(got, rd.want) {
					t.Errorf("reading %d (at %v, usage %d): rate %v, want %v", i, rd.at, rd.usage, show(got), show(rd.want))
				}
			}
		})
	}
}

func TestCPURatesKeysAreIndependentAndPruned(t *testing.T) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	r := NewCPURates()
	r.Rate("a", t0, 0)
	r.Rate("b", t0, 0)
	if got := r.Rate("a", t0.Add(2*time.Second), 4e9); !equalPtr(got, ptr(uint64(2e9))) {
		t.Fatalf("a: rate %v, want 2e9", show(got))
	}
	// b was last read at t0, a at t0+2s: eleven minutes later b is gone and
	// a is kept (it was read less than rateRetention ago at prune time).
	r.Prune(t0.Add(2*time.Second + rateRetention))
	if got := r.Rate("a", t0.Add(4*time.Second), 6e9); !equalPtr(got, ptr(uint64(1e9))) {
		t.Errorf("a after prune: rate %v, want 1e9", show(got))
	}
	r.Prune(t0.Add(time.Second + rateRetention + 2*time.Minute))
	if got := r.Rate("b", t0.Add(20*time.Minute), 1e9); got != nil {
		t.Errorf("b after prune: rate %v, want none (its reading was forgotten)", *got)
	}
}

func equalPtr(a, b *uint64) bool {
	if a == nil || b == nil {
		return a == b
	}
	return *a == *b
}

func show(v *uint64) any {
	if v == nil {
		return "none"
	}
	return *v
}
