package sdk

import (
	"context"
	"os"
	"runtime"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"

	"github.com/microlet/microlet/internal/exepages"
)

// limitParallelism gives the plugin one P unless GOMAXPROCS says otherwise.
// A plugin's work is small and bursty; with one P, gRPC's hand-offs between
// its reader, handler and writer goroutines stay on one thread instead of
// waking another, which cuts a call's round trip several-fold and keeps
// per-P caches out of memory. GOGC stays Go's default (docs/performance.md
// has what a lower one cost).
func limitParallelism() {
	if os.Getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(1)
	}
}

// releaseMemory runs once Configure has succeeded, for the life of the
// process. It collects and returns the free heap to the kernel, and unmaps
// the executable's pages: at once, for what start-up touched, then every
// 10 s once the burst of calls under way is over
// (exepages.ReleaseAfterBursts), so that what a mostly idle plugin holds
// between calls is its live heap and the code it runs rather than
// everything start-up and the last burst of calls touched. A plugin's live
// heap is a few MB: the collection costs well under a millisecond, and a
// plugin's call rarely meets it.
func releaseMemory(logger hclog.Logger) {
	err := exepages.CollectAndRelease()
	if err == nil {
		err = exepages.ReleaseAfterBursts(context.Background())
	}
	if err != nil {
		logger.Warn("stopped releasing the executable's pages", "error", err)
	}
}

// releaseAfterCalls unmaps the executable's pages once the plugin has
// served no unary call, and done none of its own Work, for a moment
// (exepages.AfterCalls): between the core's calls, a mostly idle plugin
// then maps none of the code they ran. Streams (the broker's, probe
// results) stay open for the life of the process and are not counted.
func releaseAfterCalls() grpc.ServerOption {
	a := exepages.NewAfterCalls()
	workTracker = a
	return grpc.ChainUnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
		a.Begin()
		defer a.End()
		return handler(ctx, req)
	})
}
