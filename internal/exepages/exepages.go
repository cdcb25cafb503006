//go:build linux

// Package exepages returns to the kernel the pages of the running
// executable that the process mapped but no longer uses. The core and
// every plugin (through the SDK) do it every Interval.
package exepages

import (
	"bufio"
	"context"
	"debug/elf"
	"fmt"
	"os"
	"strings"
	"syscall"
	"time"
)

// Interval is how often a long-running microlet process releases: the
// period of the core's housekeeping, stats and eviction cycles, so that
// what stays mapped is what one cycle uses. On the benchmark node a
// release costs the core about 25 minor faults a second to map back what
// it uses (docs/performance.md).
const Interval = 10 * time.Second

// ReleaseEvery releases every interval until ctx ends (nil) or a release
// fails (its error: the process maps its executable in a way Release does
// not know, so it stops trying).
func ReleaseEvery(ctx context.Context, interval time.Duration) error {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
			if err := Release(); err != nil {
				return err
			}
		}
	}
}

// Release unmaps the read-only mappings of the running executable (its
// code and read-only data). They are clean and stay in the page cache: a
// later access is a minor fault that maps them back. A Go process maps
// most of its executable (the kernel maps 64 KiB around each page it
// touches), so what stays mapped after a release is what the process
// really uses between two releases.
//
// Only a fixed-address executable (ET_EXEC, what `go build` makes by
// default) qualifies. In a position-independent one (-buildmode=pie, as
// some distributions build) the loader relocates pointers in the RELRO
// segment and then makes it read-only: those pages look clean in
// /proc/self/maps but are not, and dropping them would bring back the
// unrelocated bytes from the file.
func Release() error {
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
		return err
	}
	if fixed, err := fixedAddress("/proc/self/exe"); err != nil || !fixed {
		return err
	}
	maps, err := os.Open("/proc/self/maps")
	if err != nil {
		return err
	}
	defer maps.Close()
	scanner := bufio.NewScanner(maps)
	for scanner.Scan() {
		// address perms offset dev inode path
		fields := strings.Fields(scanner.Text())
		if len(fields) < 6 || fields[5] != exe || strings.ContainsRune(fields[1], 'w') {
			continue
		}
		var lo, hi uintptr
		if _, err := fmt.Sscanf(fields[0], "%x-%x", &lo, &hi); err != nil {
			return fmt.Errorf("/proc/self/maps line %q: %w", scanner.Text(), err)
		}
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, lo, hi-lo, syscall.MADV_DONTNEED); errno != 0 {
			return fmt.Errorf("madvise %s: %w", fields[0], errno)
		}
	}
	return scanner.Err()
}

// fixedAddress reports whether the ELF file at path is ET_EXEC.
func fixedAddress(path string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	return f.Type == elf.ET_EXEC, nil
}
