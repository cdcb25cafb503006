package pluginhost

import (
	"testing"
	"time"
)

func TestRestartDelay(t *testing.T) {
	const base, max = 100 * time.Millisecond, 30 * time.Second
	tests := []struct {
		attempt int
		want    time.Duration // before jitter
	}{
		{0, 0},
		{1, 100 * time.Millisecond},
		{2, 200 * time.Millisecond},
		{3, 400 * time.Millisecond},
		{9, 25600 * time.Millisecond},
		{10, max},
		{1000, max},
	}
	for _, tt := range tests {
		if got := restartDelay(tt.attempt, base, max, 0); got != tt.want {
			t.Errorf("attempt %d without jitter: %s, want %s", tt.attempt, got, tt.want)
		}
		low, high := restartDelay(tt.attempt, base, max, -1), restartDelay(tt.attempt, base, max, 0.999999)
		wantLow := time.Duration(float64(tt.want) * 0.8)
		wantHigh := time.Duration(float64(tt.want) * 1.2)
		if low != wantLow || high > wantHigh || high < time.Duration(float64(tt.want)*1.19) {
			t.Errorf("attempt %d: jitter range [%s, %s], want [%s, %s)", tt.attempt, low, high, wantLow, wantHigh)
		}
	}
}

func TestRestartBudget(t *testing.T) {
	start := time.Unix(1_700_000_000, 0)
	at := func(d time.Duration) time.Time { return start.Add(d) }
	tests := []struct {
		name     string
		restarts []time.Duration // offsets from start
		want     []bool
	}{
		{
			name:     "within the budget",
			restarts: []time.Duration{0, time.Second, 2 * time.Second},
			want:     []bool{true, true, true},
		},
		{
			name:     "one more than the budget in the window is refused",
			restarts: []time.Duration{0, 1, 2, 3},
			want:     []bool{true, true, true, false},
		},
		{
			name:     "old restarts leave the window",
			restarts: []time.Duration{0, time.Second, 2 * time.Second, 10 * time.Minute, 10*time.Minute + time.Second},
			want:     []bool{true, true, true, true, true},
		},
		{
			name:     "a refused restart is not counted",
			restarts: []time.Duration{0, 1, 2, 3, 4, 10 * time.Minute},
			want:     []bool{true, true, true, false, false, true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := restartBudget{limit: 3, window: 10 * time.Minute}
			for i, offset := range tt.restarts {
				if got := b.allow(at(offset)); got != tt.want[i] {
					t.Errorf("restart %d at +%s: allowed %v, want %v", i, offset, got, tt.want[i])
				}
			}
		})
	}
}

func TestRestartBudgetReset(t *testing.T) {
	now := time.Now()
	b := restartBudget{limit: 1, window: time.Hour}
	if !b.allow(now) || b.allow(now) {
		t.Fatal("a budget of 1 should allow one restart")
	}
	b.reset()
	if !b.allow(now) {
		t.Error("after reset the budget should allow a restart again")
	}
}
