//go:build linux

package exepages

import (
	"context"
	"encoding/binary"
	"fmt"
	"os"
	"runtime/debug"
	"syscall"
	"time"
)

// ReleaseBurstPages is ReleaseAfterBursts for a process with steady work
// between its bursts, the core: its PLEG relists every second, under
// 10-second cycles (housekeeping, eviction, the pod workers' resyncs, the
// plugins' health checks) and, in a cluster, node status and lease
// updates. The 10-second release alone held a cycle's code for most of
// 10 s whenever the cycle came just after it, as it did in every cycle of
// a run whose timers fell that way (tracing the core's page faults showed
// 250 of them, 15 MB, 0.4 s after each release), and releasing everything
// every second made the steady work fault its code back every second
// (docs/performance.md, Memory). So this learns which of the executable's
// pages the steady work keeps using and releases only the others:
//
//   - once a second (poll) it reads how much of its files the process maps
//     (/proc/self/statm, one read);
//   - at the first quiet poll (growth under quietSlack) it releases the
//     whole executable, and again at the next poll; the pages mapped again
//     after both releases (/proc/self/pagemap) are the steady pages;
//   - then, once the process has mapped burstSlack pages more than those
//     and a poll finds it quiet, the burst is over: it releases the pages
//     not steady;
//   - every relearn polls it starts over, to shed pages the steady work
//     no longer uses; every Interval, at the first quiet poll, it collects
//     the heap and returns its free pages to the kernel.
//
// An executable Release cannot unmap (position-independent) leaves only
// the heap to return: ReleaseAfterBursts does that every Interval.
//
// Returns nil when ctx ends, or the error of a read or release that
// failed.
func ReleaseBurstPages(ctx context.Context) error {
	ranges, err := executableRanges()
	if err != nil {
		return err
	}
	if len(ranges) == 0 {
		return ReleaseAfterBursts(ctx)
	}
	statm, err := os.Open("/proc/self/statm")
	if err != nil {
		return err
	}
	defer statm.Close()
	pagemap, err := os.Open("/proc/self/pagemap")
	if err != nil {
		return err
	}
	defer pagemap.Close()
	b := &bursts{
		read:    func() (int64, error) { return filePages(statm) },
		present: func() ([]bool, error) { return presentPages(pagemap, ranges) },
		release: func(pages []bool) error { return releasePages(ranges, pages) },
		collect: debug.FreeOSMemory,
	}
	t := time.NewTicker(poll)
	defer t.Stop()
	for polls := 1; ; polls++ {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := b.tick(polls%heapPolls == 0, polls%relearnPolls == 0); err != nil {
			return err
		}
	}
}

const (
	// burstSlack is the growth in pages (4 KiB) over the steady pages that
	// is a burst worth releasing, 1 MiB: 16 of the kernel's 64 KiB
	// fault-arounds. Less is left mapped: steady work that maps a page now
	// and then would otherwise fault it back after every release.
	burstSlack = 256
	// heapPolls is the polls between two collections of the heap.
	heapPolls = int(Interval / poll)
	// relearnPolls is the polls between two fresh learnings of the steady
	// pages. Each costs a release of them all, which the steady work maps
	// back (about 200 faults with 30 pods).
	relearnPolls = 6 * heapPolls
)

// bursts is ReleaseBurstPages's state between two polls.
type bursts struct {
	read    func() (int64, error)  // pages of files mapped
	present func() ([]bool, error) // which of the executable's pages are mapped
	release func(pages []bool) error
	collect func()

	prev int64 // pages of files mapped at the last poll
	// heapDue: the heap is collected at the next quiet poll, or after
	// maxPolls polls at the latest; heapWaited counts them.
	heapDue    bool
	heapWaited int

	phase phase
	// steady is the pages the steady work maps again after a release,
	// once learned; level is the pages of files mapped with them alone.
	steady []bool
	level  int64
	// released is, while learning, the pages of the last release, which
	// the next poll's are compared with.
	released []bool
}

// phase is where bursts is in learning the steady pages.
type phase int

const (
	// unlearned: everything mapped is released at the next quiet poll.
	unlearned phase = iota
	// candidates: the pages mapped again a poll after that release are
	// candidates, and everything is released once more.
	candidates
	// confirming: the candidates mapped again a poll after the second
	// release are the steady pages. A burst that came in one of the two
	// polls, as a 10-second cycle may just after a release, does not
	// come in both.
	confirming
	// watching: a burst's pages are released once it is over.
	watching
)

// tick is one poll. heap: the heap is due for a collection; relearn: the
// steady pages are learned afresh.
func (b *bursts) tick(heap, relearn bool) error {
	mapped, err := b.read()
	if err != nil {
		return err
	}
	quiet := mapped-b.prev < quietSlack
	b.prev = mapped
	if heap {
		b.heapDue, b.heapWaited = true, 0
	}
	if b.heapDue {
		if quiet || b.heapWaited >= maxPolls {
			b.heapDue = false
			b.collect()
		} else {
			b.heapWaited++
		}
	}
	switch b.phase {
	case unlearned:
		if !quiet {
			return nil
		}
		b.phase = candidates
		return b.releaseAll()
	case candidates:
		b.phase = confirming
		return b.releaseAll()
	case confirming:
		now, err := b.present()
		if err != nil {
			return err
		}
		b.steady = and(now, b.released)
		b.released = nil
		b.level = mapped - int64(count(andNot(now, b.steady)))
		b.phase = watching
		return nil
	}
	if relearn {
		b.phase = unlearned
		return nil
	}
	if !quiet || mapped-b.level < burstSlack {
		return nil
	}
	now, err := b.present()
	if err != nil {
		return err
	}
	return b.releaseAndRead(andNot(now, b.steady))
}

// releaseAndRead releases pages and reads how many pages of files are
// mapped after it, which the next poll's growth is measured from.
func (b *bursts) releaseAndRead(pages []bool) error {
	if err := b.release(pages); err != nil {
		return err
	}
	var err error
	b.prev, err = b.read()
	return err
}

// releaseAll releases every page mapped, which the next poll compares its
// own with.
func (b *bursts) releaseAll() error {
	now, err := b.present()
	if err != nil {
		return err
	}
	b.released = now
	return b.releaseAndRead(now)
}

func and(a, b []bool) []bool {
	c := make([]bool, len(a))
	for i := range a {
		c[i] = a[i] && b[i]
	}
	return c
}

func andNot(a, b []bool) []bool {
	c := make([]bool, len(a))
	for i := range a {
		c[i] = a[i] && !b[i]
	}
	return c
}

func count(a []bool) int {
	n := 0
	for _, x := range a {
		if x {
			n++
		}
	}
	return n
}

// presentPages reads, for every page of ranges in order, whether the
// process maps it: bit 63 of its /proc/self/pagemap entry. It reads a page
// of entries at a time.
func presentPages(pagemap *os.File, ranges []addressRange) ([]bool, error) {
	total := 0
	for _, r := range ranges {
		total += int((r.hi - r.lo) / pageSize)
	}
	pages := make([]bool, 0, total)
	var buf [4096]byte
	for _, r := range ranges {
		for first, n := int(r.lo/pageSize), int((r.hi-r.lo)/pageSize); n > 0; {
			chunk := min(n, len(buf)/8)
			if _, err := pagemap.ReadAt(buf[:8*chunk], int64(first)*8); err != nil {
				return nil, fmt.Errorf("read /proc/self/pagemap: %w", err)
			}
			for i := range chunk {
				pages = append(pages, binary.LittleEndian.Uint64(buf[8*i:])&(1<<63) != 0)
			}
			first, n = first+chunk, n-chunk
		}
	}
	return pages, nil
}

// releasePages unmaps each run of consecutive pages marked in pages, which
// follow ranges page by page as presentPages's do.
func releasePages(ranges []addressRange, pages []bool) error {
	i := 0
	for _, r := range ranges {
		n := int((r.hi - r.lo) / pageSize)
		for start := 0; start < n; {
			if !pages[i+start] {
				start++
				continue
			}
			end := start
			for end < n && pages[i+end] {
				end++
			}
			lo := r.lo + uintptr(start)*pageSize
			if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, lo, uintptr(end-start)*pageSize, syscall.MADV_DONTNEED); errno != 0 {
				return fmt.Errorf("madvise %x-%x: %w", lo, lo+uintptr(end-start)*pageSize, errno)
			}
			start = end
		}
		i += n
	}
	return nil
}

// pageSize is the unit of pagemap and of madvise.
var pageSize = uintptr(os.Getpagesize())
