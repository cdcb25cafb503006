//go:build linux

// Package exepages returns to the kernel the pages of the running
// executable that the process mapped but no longer uses, and its free heap.
// The core and every plugin (through the SDK) do it every Interval, once
// the burst of work under way is over (policy.go).
package exepages

import (
	"bufio"
	"context"
	"debug/elf"
	"fmt"
	"os"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// ReleaseAfterBursts runs until ctx ends (nil) or a release fails (its
// error: the process maps its executable in a way Release does not know, so
// it stops trying). Every Interval it waits for the burst of work under way
// to end (policy.go), then collects the heap and returns its free pages to
// the kernel (debug.FreeOSMemory), then releases the executable's pages.
// The collection comes first: it reads the stack maps and type data of what
// it scans, which the release then unmaps too.
func ReleaseAfterBursts(ctx context.Context) error {
	statm, err := os.Open("/proc/self/statm")
	if err != nil {
		return err
	}
	defer statm.Close()
	read := func() (int64, error) { return filePages(statm) }
	t := time.NewTicker(Interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		if err := waitQuiet(read, func() { time.Sleep(poll) }); err != nil {
			return err
		}
		if err := CollectAndRelease(); err != nil {
			return err
		}
	}
}

// CollectAndRelease collects the heap and returns its free pages to the
// kernel, then releases the executable's pages.
func CollectAndRelease() error {
	debug.FreeOSMemory()
	return Release()
}

// filePages is the resident pages of files the process maps, the third
// field of /proc/self/statm (RssFile and RssShmem): the kernel keeps it as
// a counter, so a read costs one system call, unlike smaps. In a static Go
// executable nearly all of it is the executable.
func filePages(statm *os.File) (int64, error) {
	var buf [128]byte
	n, err := statm.ReadAt(buf[:], 0)
	if err != nil && n == 0 {
		return 0, fmt.Errorf("read /proc/self/statm: %w", err)
	}
	return parseStatm(string(buf[:n]))
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
	ranges, err := executableRanges()
	if err != nil {
		return err
	}
	for _, r := range ranges {
		if _, _, errno := syscall.Syscall(syscall.SYS_MADVISE, r.lo, r.hi-r.lo, syscall.MADV_DONTNEED); errno != 0 {
			return fmt.Errorf("madvise %x-%x: %w", r.lo, r.hi, errno)
		}
	}
	return nil
}

// addressRange is one mapping, [lo, hi).
type addressRange struct{ lo, hi uintptr }

// executableRanges are the read-only mappings of the running executable;
// none for a position-independent one. They are fixed at exec, so they
// are read once: a release every 10 s then costs the madvise calls alone.
// They are found by device and inode, not path, which a file replaced on
// disk changes to "... (deleted)".
var executableRanges = sync.OnceValues(func() ([]addressRange, error) {
	var exe syscall.Stat_t
	if err := syscall.Stat("/proc/self/exe", &exe); err != nil {
		return nil, err
	}
	if fixed, err := fixedAddress("/proc/self/exe"); err != nil || !fixed {
		return nil, err
	}
	// The executable's mappings name its device and inode, whatever its path.
	dev := fmt.Sprintf("%02x:%02x", unix.Major(exe.Dev), unix.Minor(exe.Dev))
	ino := strconv.FormatUint(exe.Ino, 10)
	maps, err := os.Open("/proc/self/maps")
	if err != nil {
		return nil, err
	}
	defer maps.Close()
	var ranges []addressRange
	scanner := bufio.NewScanner(maps)
	for scanner.Scan() {
		// address perms offset dev inode path
		fields := strings.Fields(scanner.Text())
		if len(fields) < 6 || fields[3] != dev || fields[4] != ino || strings.ContainsRune(fields[1], 'w') {
			continue
		}
		var r addressRange
		if _, err := fmt.Sscanf(fields[0], "%x-%x", &r.lo, &r.hi); err != nil {
			return nil, fmt.Errorf("/proc/self/maps line %q: %w", scanner.Text(), err)
		}
		ranges = append(ranges, r)
	}
	return ranges, scanner.Err()
})

// fixedAddress reports whether the ELF file at path is ET_EXEC.
func fixedAddress(path string) (bool, error) {
	f, err := elf.Open(path)
	if err != nil {
		return false, err
	}
	defer f.Close()
	return f.Type == elf.ET_EXEC, nil
}
