//go:build linux

package exepages

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// When a process releases. A process's work comes in bursts: the core's
// 10-second cycles (housekeeping, eviction, plugin health checks, log
// rotation) and the calls they make to each plugin, over the steady work
// between them (the core's PLEG relists every second). A burst maps the code
// and read-only data it runs, with the kernel's fault-around 64 KiB at a
// time, and leaves its garbage on the heap. Released on a fixed timer, a
// process kept all of that from the burst to the next release: the core's
// timer happened to fire just before its cycles, which mapped 16 MB of its
// executable back within 200 ms and held it for the next 10 s
// (docs/performance.md, Memory). Released once a burst is over, what stays
// mapped is what the steady work uses, which maps it back within a second of
// any release: releasing again gains nothing then, so a release waits for
// growth beyond that level.
const (
	// Interval bounds the time between two releases, for a process that
	// is never quiet or never grows beyond its steady work.
	Interval = 10 * time.Second
	// tick is how often the process reads how much of its files it maps
	// (/proc/self/statm, one read).
	tick = time.Second
	// settle is how long after a release the steady work has had to map
	// back what it uses: the core's PLEG relists every second and it checks
	// each plugin's health every 2 s, which each plugin serves.
	settle = 3 * time.Second
	// collectGap is the least time between two collections. Each costs
	// the core a few milliseconds of CPU; a fixed 10-second timer collected
	// as often, and a burst every 10 s still gets a collection after it.
	collectGap = 8 * time.Second
	// growth is how many pages (4 KiB) beyond the steady work's a process
	// must map for a pause in that growth to count as the end of a burst:
	// 1 MiB, 16 fault-arounds.
	growth = 256
	// quietSlack is the growth over one tick that still counts as quiet:
	// four fault-arounds, the odd path the steady work takes now and then.
	quietSlack = 64
)

// policy decides, every tick, from the pages of files the process maps,
// whether it releases and whether it also collects its heap first.
type policy struct {
	lastRelease, lastCollect time.Time
	// prev is what was mapped at the last tick.
	prev int64
	// steady is what was mapped at the first quiet tick settle after each
	// of the last releases, -1 where none was seen; settled says whether
	// the one after the last release was. The steady level is their least:
	// a release just before a burst sees the burst land within settle.
	steady  [3]int64
	next    int
	settled bool
}

// newPolicy starts at now, when the process maps mapped pages, as if it had
// just released and collected.
func newPolicy(now time.Time, mapped int64) *policy {
	p := &policy{steady: [3]int64{-1, -1, -1}}
	p.released(now, mapped, true)
	return p
}

// step is one tick at now with mapped pages. A release is due when the
// process grew by growth pages beyond its steady level and stopped growing
// over the last tick (a burst ended); or, whatever it does, Interval after
// the last release. A collection goes with a release at least collectGap
// after the last one.
func (p *policy) step(now time.Time, mapped int64) (release, collect bool) {
	quiet := mapped-p.prev < quietSlack
	p.prev = mapped
	since := now.Sub(p.lastRelease)
	if quiet && since >= settle && !p.settled {
		p.steady[p.next] = mapped
		p.next = (p.next + 1) % len(p.steady)
		p.settled = true
	}
	release = since >= Interval || (quiet && p.settled && mapped-p.steadyLevel() >= growth)
	return release, release && now.Sub(p.lastCollect) >= collectGap
}

// steadyLevel is the least steady level seen.
func (p *policy) steadyLevel() int64 {
	level := int64(-1)
	for _, s := range p.steady {
		if s >= 0 && (level < 0 || s < level) {
			level = s
		}
	}
	return level
}

// released records a release at now, after which mapped pages were left;
// collected says whether a collection went with it.
func (p *policy) released(now time.Time, mapped int64, collected bool) {
	p.lastRelease, p.prev, p.settled = now, mapped, false
	if collected {
		p.lastCollect = now
	}
}

// parseStatm is the resident file pages, the third field, of a
// /proc/<pid>/statm line: "size resident shared text lib data dt".
func parseStatm(line string) (int64, error) {
	fields := strings.Fields(line)
	if len(fields) < 3 {
		return 0, fmt.Errorf("statm %q: want at least 3 fields", line)
	}
	pages, err := strconv.ParseInt(fields[2], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("statm %q: %w", line, err)
	}
	return pages, nil
}
