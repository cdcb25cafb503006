package sdk

import (
	"context"
	"os"
	"runtime"
	"runtime/debug"

	"github.com/hashicorp/go-hclog"

	"github.com/microlet/microlet/internal/exepages"
)

// gcPercent is the plugin's GOGC unless the environment sets one. A
// plugin's heap is a few MB, most of it live; at Go's default of 100 the
// heap may double before a collection and the garbage of each call
// lingers. At 25, the built-in plugins hold about 2 MB less each at 30
// pods for a negligible CPU cost (docs/performance.md).
const gcPercent = 25

// tuneRuntime sets the Go runtime for a small, bursty plugin process
// unless the environment says otherwise: one P, because with one P gRPC's
// hand-offs between its reader, handler and writer goroutines stay on one
// thread instead of waking another, which cuts a call's round trip
// several-fold and keeps per-P caches out of memory; and gcPercent.
func tuneRuntime() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(gcPercent)
	}
}

// releaseMemory runs once Configure has succeeded, for the life of the
// process: it returns the start-up heap to the kernel, then unmaps the
// executable's pages every exepages.Interval, so that what stays mapped
// is the plugin's working set rather than everything start-up touched
// (handshake, TLS set-up, descriptor registration).
func releaseMemory(logger hclog.Logger) {
	debug.FreeOSMemory()
	if err := exepages.Release(); err != nil {
		logger.Warn("cannot release the executable's pages", "error", err)
		return
	}
	if err := exepages.ReleaseEvery(context.Background(), exepages.Interval); err != nil {
		logger.Warn("stopped releasing the executable's pages", "error", err)
	}
}
