package pluginhost

import (
	"time"
)

// jitterFraction spreads restarts of plugins that died together.
const jitterFraction = 0.2

// restartDelay is how long to wait before restart number attempt (0-based)
// of a crash loop: the first restart is immediate, then base doubling up to
// max. jitter in [-1, 1) moves the delay by up to jitterFraction either way.
func restartDelay(attempt int, base, max time.Duration, jitter float64) time.Duration {
	if attempt <= 0 {
		return 0
	}
	d := base
	for i := 1; i < attempt && d < max; i++ {
		d *= 2
	}
	if d > max {
		d = max
	}
	return d + time.Duration(float64(d)*jitterFraction*jitter)
}

// restartBudget counts restarts in a sliding window.
type restartBudget struct {
	limit  int
	window time.Duration
	times  []time.Time
}

// allow records a restart at now and says whether it fits the budget: at
// most limit restarts within any window. A refused restart is not recorded.
func (b *restartBudget) allow(now time.Time) bool {
	kept := b.times[:0]
	for _, t := range b.times {
		if now.Sub(t) < b.window {
			kept = append(kept, t)
		}
	}
	b.times = kept
	if len(b.times) >= b.limit {
		return false
	}
	b.times = append(b.times, now)
	return true
}

// reset forgets past restarts: the operator acted (new spec or binary).
func (b *restartBudget) reset() { b.times = b.times[:0] }
