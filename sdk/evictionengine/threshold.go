package evictionengine

import (
	"fmt"
	"time"
)

// Value is a threshold or minimum-reclaim amount: either an absolute
// quantity or a percentage of the signal's capacity.
type Value struct {
	// Quantity in base units (bytes, inodes, processes); used when Percentage is 0.
	Quantity int64
	// Percentage of capacity as a fraction (0.1 for "10%"). It is a float32
	// because upstream parses it into one, and a float64 would resolve some
	// thresholds a byte away from the kubelet's.
	Percentage float32
	// text is the value as the operator wrote it, canonicalised ("100Mi", "10%").
	text string
}

// resolve turns the value into an amount of a signal whose capacity is capacity
// (upstream evictionapi.GetThresholdQuantity).
func (v Value) resolve(capacity int64) int64 {
	if v.Percentage == 0 {
		return v.Quantity
	}
	return int64(float64(capacity) * float64(v.Percentage))
}

// String is the value as configured.
func (v Value) String() string { return v.text }

// Threshold is one eviction threshold: the signal falls below Value.
type Threshold struct {
	Signal Signal
	Value  Value
	// GracePeriod is how long a soft threshold must hold before pods are
	// evicted; 0 for a hard threshold.
	GracePeriod time.Duration
	// MinReclaim, when set, keeps the threshold met until the signal is back
	// above Value + MinReclaim.
	MinReclaim *Value
}

// Hard reports whether the threshold evicts without a grace period.
func (t Threshold) Hard() bool { return t.GracePeriod == 0 }

// String is the threshold in the kubelet's flag syntax, with its grace period
// if it is soft: "memory.available<100Mi", "memory.available<300Mi for 1m30s".
func (t Threshold) String() string {
	if t.Hard() {
		return fmt.Sprintf("%s<%s", t.Signal, t.Value)
	}
	return fmt.Sprintf("%s<%s for %s", t.Signal, t.Value, t.GracePeriod)
}

// key identifies the threshold in persisted state. A change of value or
// grace period makes a new threshold whose clocks start afresh; a change of
// minimum reclaim does not.
func (t Threshold) key() string {
	if t.Hard() {
		return "hard " + t.String()
	}
	return "soft " + t.String()
}

// met reports whether the threshold is met by an observation; with
// enforceMinReclaim the minimum reclaim is added to the threshold, which is
// how a threshold that has been met stays met until enough was reclaimed.
func (t Threshold) met(o observation, enforceMinReclaim bool) bool {
	limit := t.Value.resolve(o.capacity)
	if enforceMinReclaim && t.MinReclaim != nil {
		limit += t.MinReclaim.resolve(o.capacity)
	}
	return o.available < limit
}
