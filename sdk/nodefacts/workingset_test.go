package nodefacts

import "testing"

func TestWorkingSet(t *testing.T) {
	for _, tt := range []struct{ usage, inactive, want uint64 }{
		{100, 30, 70},
		{100, 0, 100},
		{100, 100, 0},
		{100, 130, 0}, // read apart, inactive_file may pass usage: floored at 0
	} {
		if got := WorkingSet(tt.usage, tt.inactive); got != tt.want {
			t.Errorf("WorkingSet(%d, %d) = %d, want %d", tt.usage, tt.inactive, got, tt.want)
		}
	}
}
