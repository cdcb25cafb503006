package e2e

import (
	"testing"
	"time"
)

// The gaps stay within half and one and a half of the mean, and vary.
func TestSampleGapJittersAroundTheMean(t *testing.T) {
	const window, n = 10 * time.Second, 10
	mean := window / n
	seen := map[time.Duration]bool{}
	for range 100 {
		gap := SampleGap(window, n)
		if gap < mean/2 || gap >= mean*3/2 {
			t.Fatalf("SampleGap(%v, %d) = %v, want within [%v, %v)", window, n, gap, mean/2, mean*3/2)
		}
		seen[gap] = true
	}
	if len(seen) < 50 {
		t.Errorf("100 gaps took %d values; want them spread", len(seen))
	}
}
