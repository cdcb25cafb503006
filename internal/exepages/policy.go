//go:build linux

package exepages

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// When a process releases. A process's work comes in bursts: the core's
// 10-second cycles (housekeeping, eviction, log rotation, the pod workers'
// resyncs) and the calls they make to each plugin, over the steady work
// between them (the core's PLEG relists every second and checks each
// plugin's health every 2 s). A burst maps the code and read-only data it
// runs, with the kernel's fault-around 64 KiB at a time. Released at once on
// a 10-second timer, the core released about 200 ms before its cycles,
// whose timers started with it: they mapped 16 MB of its executable back
// within 200 ms and it held them until the next release (docs/performance.md,
// Memory). So at each Interval a process first waits for the burst under
// way, if any, to end: it reads how much of its files it maps once a
// second, and releases at the first read that found no growth, at the
// latest after maxPolls reads.
const (
	// Interval is the time between two releases.
	Interval = 10 * time.Second
	// poll is how long a process waits between two reads of how much of
	// its files it maps (/proc/self/statm, one read) while it waits for
	// a burst to end.
	poll = time.Second
	// maxPolls bounds that wait, for a process that keeps growing.
	maxPolls = 5
	// quietSlack is the growth in pages (4 KiB) between two reads that
	// still counts as quiet: four fault-arounds, the odd path the steady
	// work takes now and then.
	quietSlack = 64
)

// waitQuiet reads mapped pages (read) at once, then after each sleep, and
// returns at the first read that grew less than quietSlack since the one
// before, or after maxPolls sleeps.
func waitQuiet(read func() (int64, error), sleep func()) error {
	prev, err := read()
	if err != nil {
		return err
	}
	for range maxPolls {
		sleep()
		mapped, err := read()
		if err != nil {
			return err
		}
		if mapped-prev < quietSlack {
			return nil
		}
		prev = mapped
	}
	return nil
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
