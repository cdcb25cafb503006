package nodeapi

import (
	"fmt"
	"io"
	"net/http"
	"net/http/pprof"
	"os"
	"runtime"
	"strconv"
	"strings"

	"github.com/hashicorp/go-hclog"

	"github.com/microlet/microlet/core/config"
)

// The /debug endpoints, upstream's paths (pkg/kubelet/server).
const (
	pprofPath     = "/debug/pprof/"
	debugFlagPath = "/debug/flags/v"
)

// profiling serves Go's profiles as upstream's InstallProfilingHandler: the CPU
// profile, symbols, the command line and the execution trace by name, and
// every other name from the index (heap, goroutine, allocs, block, mutex,
// threadcreate; an unknown name is 404). Importing net/http/pprof also
// registers these on http.DefaultServeMux, which nothing in microlet serves.
func (h *handlers) profiling() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if profileOutlastsWriteTimeout(r) {
			writePlainText(w, http.StatusBadRequest, "profile duration exceeds server's WriteTimeout")
			return
		}
		switch strings.TrimPrefix(r.URL.Path, pprofPath) {
		case "profile":
			pprof.Profile(w, r)
		case "symbol":
			pprof.Symbol(w, r)
		case "cmdline":
			cmdline(w)
		case "trace":
			pprof.Trace(w, r)
		default:
			pprof.Index(w, r)
		}
	})
}

// profileOutlastsWriteTimeout is net/http/pprof's check before Go 1.23: a
// profile, trace or delta whose ?seconds= reaches the server's write
// timeout is refused. Go 1.23 dropped it and stretches the write deadline
// instead, so a client could hold the process's one CPU profiler (every
// other profile request fails meanwhile) for as long as it asks.
func profileOutlastsWriteTimeout(r *http.Request) bool {
	seconds, err := strconv.ParseFloat(r.FormValue("seconds"), 64)
	if err != nil {
		return false // pprof answers a malformed value itself
	}
	srv, ok := r.Context().Value(http.ServerContextKey).(*http.Server)
	return ok && srv.WriteTimeout > 0 && seconds >= srv.WriteTimeout.Seconds()
}

// cmdline is pprof.Cmdline with the values of the flags that may carry
// credentials hidden, as /configz hides them.
func cmdline(w http.ResponseWriter) {
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	_, _ = io.WriteString(w, strings.Join(config.RedactedArgs(os.Args), "\x00"))
}

// startContentionProfiling records every blocking event for
// /debug/pprof/block, as upstream does when it serves the profiling
// handler with enableContentionProfiling.
func startContentionProfiling(cfg *config.Config) {
	if cfg.Port != 0 && cfg.EnableContentionProfiling && debuggingOf(cfg).serves(profilingGroup) {
		runtime.SetBlockProfileRate(1)
	}
}

// debugFlags serves /debug/flags/v as upstream's StringFlagPutHandler over
// klog's verbosity: a PUT whose body is a verbosity sets the log level of
// the agent (h.log shares it: go-hclog loggers derived from one share its
// level) to levelForVerbosity's, until the next reload or restart. Plugins
// keep the level they were started with.
func (h *handlers) debugFlags() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPut {
			writePlainText(w, http.StatusNotAcceptable, "unsupported http method")
			return
		}
		body, err := io.ReadAll(r.Body)
		if err != nil {
			writePlainText(w, http.StatusBadRequest, "error reading request body: "+err.Error())
			return
		}
		text := strings.TrimSpace(string(body))
		verbosity, err := strconv.ParseUint(text, 10, 32)
		if err != nil {
			writePlainText(w, http.StatusBadRequest, fmt.Sprintf("expected a klog verbosity, a whole number from 0 (such as 4 for debug), got %q", text))
			return
		}
		level := levelForVerbosity(verbosity)
		h.log.SetLevel(level)
		h.log.Info("log level set", "level", level.String(), "verbosity", verbosity, "by", "PUT "+debugFlagPath)
		writePlainText(w, http.StatusOK, fmt.Sprintf("successfully set the log level to %s (verbosity %d)", level, verbosity))
	})
}

// levelForVerbosity maps a klog verbosity to the go-hclog level that shows
// what the Kubernetes logging conventions log at it: 0 to 3 (always shown,
// the default, steady state, changes) info, 4 ("debug level") debug, 5
// ("trace level") and more trace. warn and error have no verbosity: they are
// set with log_level.
func levelForVerbosity(v uint64) hclog.Level {
	switch {
	case v >= 5:
		return hclog.Trace
	case v == 4:
		return hclog.Debug
	}
	return hclog.Info
}

// writePlainText answers as upstream's flag handler does.
func writePlainText(w http.ResponseWriter, code int, text string) {
	w.Header().Set("Content-Type", "text/plain")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	fmt.Fprintln(w, text)
}
