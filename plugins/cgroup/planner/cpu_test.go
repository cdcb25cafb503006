package planner

import "testing"

func TestMilliCPUToShares(t *testing.T) {
	tests := []struct {
		milli int64
		want  uint64
	}{
		{0, 2}, {1, 2}, {2, 2}, {3, 3}, {100, 102}, {250, 256}, {1000, 1024}, {1500, 1536},
		{256000, 262144}, {300000, 262144},
	}
	for _, tt := range tests {
		if got := MilliCPUToShares(tt.milli); got != tt.want {
			t.Errorf("MilliCPUToShares(%d) = %d, want %d", tt.milli, got, tt.want)
		}
	}
}

func TestMilliCPUToQuota(t *testing.T) {
	tests := []struct {
		milli  int64
		period uint64
		want   int64
	}{
		{0, 100000, 0},
		{1, 100000, 1000}, // at least 1ms
		{9, 100000, 1000},
		{10, 100000, 1000},
		{11, 100000, 1100},
		{200, 100000, 20000},
		{1500, 100000, 150000},
		{500, 50000, 25000},
		{10, 5000, 1000},
	}
	for _, tt := range tests {
		if got := MilliCPUToQuota(tt.milli, tt.period); got != tt.want {
			t.Errorf("MilliCPUToQuota(%d, %d) = %d, want %d", tt.milli, tt.period, got, tt.want)
		}
	}
}
