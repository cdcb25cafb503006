package e2e

import (
	"math/rand/v2"
	"time"
)

// SampleGap is the pause before the next of n reads spread over window:
// window/n on average, drawn uniformly from half of it to one and a half,
// so that a benchmark's reads fall at every phase of an agent's periodic
// work. Read at fixed steps, every 10 s say, a process that maps code for
// a few seconds of each 10 is found always mapping it or never, by the
// phase of that one start.
func SampleGap(window time.Duration, n int) time.Duration {
	mean := window / time.Duration(n)
	return mean/2 + rand.N(mean)
}
