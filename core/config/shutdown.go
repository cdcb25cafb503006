package config

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"time"
)

// zeroDurations are the duration keys whose 0 means "off".
var zeroDurations = map[string]bool{
	"shutdown_grace_period":               true,
	"shutdown_grace_period_critical_pods": true,
	"eviction_pressure_poll_interval":     true,
}

// PriorityGracePeriod is one entry of shutdown_grace_period_by_pod_priority.
type PriorityGracePeriod struct {
	Priority int32
	Grace    time.Duration
}

// ShutdownGracePeriodsByPodPriority parses
// shutdown_grace_period_by_pod_priority, by priority.
func (c *Config) ShutdownGracePeriodsByPodPriority() ([]PriorityGracePeriod, error) {
	var out []PriorityGracePeriod
	// In key order, so that the first bad entry reported is always the same.
	for _, key := range slices.Sorted(maps.Keys(c.ShutdownGracePeriodByPodPriority)) {
		value := c.ShutdownGracePeriodByPodPriority[key]
		priority, err := strconv.ParseInt(key, 10, 32)
		if err != nil {
			return nil, fmt.Errorf("priority %q: expected a whole number (a 32-bit pod priority)", key)
		}
		grace, err := time.ParseDuration(value)
		if err != nil || grace < 0 || grace%time.Second != 0 {
			return nil, fmt.Errorf("priority %s: expected a duration of whole seconds such as \"30s\", got %q", key, value)
		}
		out = append(out, PriorityGracePeriod{Priority: int32(priority), Grace: grace})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Priority < out[j].Priority })
	return out, nil
}

// shutdown checks graceful node shutdown's keys as the kubelet does.
func (v *validator) shutdown() {
	c := v.c
	for _, p := range []struct {
		key string
		d   time.Duration
	}{{"shutdown_grace_period", c.ShutdownGracePeriod}, {"shutdown_grace_period_critical_pods", c.ShutdownGracePeriodCriticalPods}} {
		// A negative one is positiveDurations' to report.
		if p.d > 0 && p.d%time.Second != 0 {
			v.fail(p.key, "expected zero or whole seconds of at least 1s, got %s", p.d)
		}
	}
	if c.ShutdownGracePeriodCriticalPods > c.ShutdownGracePeriod {
		v.fail("shutdown_grace_period_critical_pods", "must be at most shutdown_grace_period (%s), got %s", c.ShutdownGracePeriod, c.ShutdownGracePeriodCriticalPods)
	}
	if _, err := c.ShutdownGracePeriodsByPodPriority(); err != nil {
		v.fail("shutdown_grace_period_by_pod_priority", "%v", err)
	}
	if len(c.ShutdownGracePeriodByPodPriority) > 0 && (c.ShutdownGracePeriod > 0 || c.ShutdownGracePeriodCriticalPods > 0) {
		v.fail("shutdown_grace_period_by_pod_priority", "cannot be set with shutdown_grace_period or shutdown_grace_period_critical_pods")
	}
}
