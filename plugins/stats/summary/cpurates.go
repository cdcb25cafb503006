package summary

import (
	"sync"
	"time"
)

const (
	// minRateWindow is the shortest span a cpu rate is measured over. Two
	// readings closer than this (back-to-back fresh requests) would give a
	// rate dominated by scheduling noise, so the last rate is kept instead.
	minRateWindow = time.Second
	// rateRetention drops the readings of cgroups not seen for this long:
	// the kubelet's defaultCachePeriod for its cpu usage cache.
	rateRetention = 10 * time.Minute
)

// CPURates turns cumulative cpu time into usage_nano_cores, the average
// rate between the previous reading of a cgroup and this one, as cadvisor
// does between two housekeeping samples. It is safe for concurrent use.
type CPURates struct {
	mu     sync.Mutex
	byKey  map[string]*cpuRecord
	pruned time.Time
}

type cpuRecord struct {
	at    time.Time
	usage uint64
	// rate is the last rate computed, answered again for readings that
	// come sooner than minRateWindow; nil until two readings were taken.
	rate *uint64
	seen time.Time
}

// NewCPURates returns an empty rate tracker.
func NewCPURates() *CPURates {
	return &CPURates{byKey: map[string]*cpuRecord{}}
}

// Rate records usage (cumulative nanoseconds) read at at for key and
// returns the rate in nanocores since the kept reading, or nil when there
// is none yet or the counter went backwards (the cgroup was recreated). A
// reading less than minRateWindow after the kept one answers the last rate
// and is not kept.
func (r *CPURates) Rate(key string, at time.Time, usage uint64) *uint64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.byKey[key]
	if !ok || usage < rec.usage {
		r.byKey[key] = &cpuRecord{at: at, usage: usage, seen: at}
		return nil
	}
	if at.After(rec.seen) {
		rec.seen = at
	}
	if at.Sub(rec.at) < minRateWindow {
		return copyOf(rec.rate)
	}
	span := at.Sub(rec.at)
	rate := uint64(float64(usage-rec.usage) / span.Seconds())
	rec.at, rec.usage, rec.rate = at, usage, &rate
	return copyOf(&rate)
}

// Prune forgets keys not read for rateRetention before now. It does the
// work at most once per minute.
func (r *CPURates) Prune(now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if now.Sub(r.pruned) < time.Minute {
		return
	}
	r.pruned = now
	for key, rec := range r.byKey {
		if now.Sub(rec.seen) > rateRetention {
			delete(r.byKey, key)
		}
	}
}

func copyOf(v *uint64) *uint64 {
	if v == nil {
		return nil
	}
	c := *v
	return &c
}
