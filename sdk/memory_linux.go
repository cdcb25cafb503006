package sdk

import (
	"bufio"
	"debug/elf"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"syscall"
)

// limitParallelism gives the plugin one P unless GOMAXPROCS says otherwise.
// A plugin's work is small and bursty; with one P, gRPC's hand-offs between
// its reader, handler and writer goroutines stay on one thread instead of
// waking another, which cuts a call's round trip several-fold (see
// docs/performance.md) and keeps per-P caches out of memory.
func limitParallelism() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
}

// releaseStartupMemory runs once after Configure. It returns the start-up
// heap to the kernel and unmaps the read-only pages of the executable that
// only start-up touched (handshake, TLS set-up, descriptor registration).
// Those pages are clean and stay in the page cache: a later access is a
// minor fault, and the kernel could reclaim them anyway. What remains mapped
// is the plugin's real working set.
//
// Only a fixed-address executable (ET_EXEC, what `go build` makes by
// default) qualifies. In a position-independent one (-buildmode=pie, as
// some distributions build) the loader relocates pointers in the RELRO
// segment and then makes it read-only: those pages look clean in
// /proc/self/maps but are not, and dropping them would bring back the
// unrelocated bytes from the file.
func releaseStartupMemory() {
	debug.FreeOSMemory()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil || !fixedAddressExecutable("/proc/self/exe") {
		return
	}
	maps, err := os.Open("/proc/self/maps")
	if err != nil {
		return
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
			continue
		}
		_, _, _ = syscall.Syscall(syscall.SYS_MADVISE, lo, hi-lo, syscall.MADV_DONTNEED)
	}
}

// fixedAddressExecutable reports whether the ELF file at path is ET_EXEC.
func fixedAddressExecutable(path string) bool {
	f, err := elf.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	return f.Type == elf.ET_EXEC
}
