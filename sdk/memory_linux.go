package sdk

import (
	"bufio"
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
func releaseStartupMemory() {
	debug.FreeOSMemory()
	exe, err := os.Readlink("/proc/self/exe")
	if err != nil {
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
