package containerlogs

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// Options say what part of a log to read and how, upstream's LogOptions.
type Options struct {
	// TailLines reads only the last lines of the file; -1 reads it all.
	TailLines int64
	// LimitBytes stops after this many bytes written; -1 means no limit.
	LimitBytes int64
	// Since skips lines written before it.
	Since time.Time
	// Follow keeps reading as the container writes, across rotations,
	// until it stops running or the caller's context ends.
	Follow bool
	// Timestamps prefixes every line with its time (RFC 3339, nine digits).
	Timestamps bool
}

// NewOptions converts a pod's log options as upstream's NewLogOptions
// does: the later of sinceSeconds (counted back from now) and sinceTime
// wins.
func NewOptions(p *v1.PodLogOptions, now time.Time) Options {
	opts := Options{TailLines: -1, LimitBytes: -1, Follow: p.Follow, Timestamps: p.Timestamps}
	if p.TailLines != nil {
		opts.TailLines = *p.TailLines
	}
	if p.LimitBytes != nil {
		opts.LimitBytes = *p.LimitBytes
	}
	if p.SinceSeconds != nil {
		opts.Since = now.Add(-time.Duration(*p.SinceSeconds) * time.Second)
	}
	if p.SinceTime != nil && p.SinceTime.After(opts.Since) {
		opts.Since = p.SinceTime.Time
	}
	return opts
}
