package memnotify

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"path/filepath"
	"strconv"

	"golang.org/x/sys/unix"
)

const (
	sourceMemoryEvents = "memory.events"
	sourcePSI          = "psi"
)

// breachEvents are the memory.events counters that say the cgroup ran into
// its memory.high or memory.max, or the OOM killer ran in it. "low" is left
// out: it counts reclaim of memory that was protected, not a shortage.
var breachEvents = []string{"high", "max", "oom", "oom_kill"}

// v2Specs are the cgroup v2 watches of one cgroup, dir its directory in the
// unified tree: memory.events and a PSI trigger. The node (the root) has no
// memory.events; its PSI file is the kernel's, in procPressure.
func v2Specs(dir, procPressure, trigger, cgroup string) []watchSpec {
	psiFile := filepath.Join(dir, "memory.pressure")
	if cgroup == "" {
		psiFile = filepath.Join(procPressure, "memory")
	}
	psi := Event{Cgroup: cgroup, Source: sourcePSI}
	specs := []watchSpec{{
		key:   watchKey(sourcePSI, cgroup, 0),
		event: psi,
		file:  psiFile,
		open:  func() (*watch, error) { return openPSI(psiFile, trigger, psi) },
	}}
	if cgroup != "" {
		events := Event{Cgroup: cgroup, Source: sourceMemoryEvents}
		file := filepath.Join(dir, "memory.events")
		specs = append(specs, watchSpec{
			key:   watchKey(sourceMemoryEvents, cgroup, 0),
			event: events,
			file:  file,
			open:  func() (*watch, error) { return openMemoryEvents(file, events) },
		})
	}
	return specs
}

// openPSI writes a trigger to a pressure file; the kernel then signals
// EPOLLPRI on that descriptor at most once per window while the stall
// exceeds the threshold (Documentation/accounting/psi.rst). Closing the
// descriptor removes the trigger.
func openPSI(file, trigger string, event Event) (*watch, error) {
	fd, err := unix.Open(file, unix.O_RDWR|unix.O_NONBLOCK|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, notOffered(file, err)
	}
	if _, err := unix.Write(fd, append([]byte(trigger), 0)); err != nil {
		unix.Close(fd)
		return nil, notOffered(file, fmt.Errorf("writing the trigger %q: %w", trigger, err))
	}
	return &watch{
		fd:     fd,
		events: unix.EPOLLPRI,
		event:  event,
		fired: func() (bool, error) {
			// Reading fails once the cgroup is gone, which ends the watch.
			_, err := readAt(fd)
			return true, err
		},
		closer: func() { unix.Close(fd) },
	}, nil
}

// openMemoryEvents watches a cgroup's memory.events: the kernel signals
// EPOLLPRI when a counter changes, until the file is read again.
func openMemoryEvents(file string, event Event) (*watch, error) {
	fd, err := unix.Open(file, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, notOffered(file, err)
	}
	content, err := readAt(fd)
	if err != nil {
		unix.Close(fd)
		return nil, err
	}
	last := parseBreaches(content)
	return &watch{
		fd:     fd,
		events: unix.EPOLLPRI,
		event:  event,
		fired: func() (bool, error) {
			content, err := readAt(fd)
			if err != nil {
				return false, err
			}
			now := parseBreaches(content)
			breached := now > last
			last = now
			return breached, nil
		},
		closer: func() { unix.Close(fd) },
	}, nil
}

// parseBreaches sums the breach counters of a memory.events file.
func parseBreaches(content []byte) uint64 {
	var sum uint64
	s := bufio.NewScanner(bytes.NewReader(content))
	for s.Scan() {
		name, value, ok := bytes.Cut(s.Bytes(), []byte(" "))
		if !ok {
			continue
		}
		for _, b := range breachEvents {
			if string(name) == b {
				n, err := strconv.ParseUint(string(value), 10, 64)
				if err == nil {
					sum += n
				}
			}
		}
	}
	return sum
}

// readAt reads a small kernel file from its start, which also re-arms a
// kernfs poll.
func readAt(fd int) ([]byte, error) {
	buf := make([]byte, 4096)
	n, err := unix.Pread(fd, buf, 0)
	if err != nil {
		return nil, err
	}
	return buf[:n], nil
}

// notOffered tells "the kernel has no such notification here" (no file, PSI
// disabled) from real failures.
func notOffered(file string, err error) error {
	if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP) {
		return fmt.Errorf("%s: %w: %w", file, errNotOffered, err)
	}
	return fmt.Errorf("%s: %w", file, err)
}
