package nodeapi

import (
	"net/http"
	"sync"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/microlet/microlet/core/config"
	"github.com/microlet/microlet/core/kinds/stats"
)

// route is one endpoint of the node API.
type route struct {
	// pattern is its http.ServeMux pattern.
	pattern string
	// subresource is what authorization asks of requests it serves
	// (nodes/<subresource>); the router fuzz test holds the path mapping
	// of core/nodeapi/auth to it.
	subresource string
	// create: authorization asks for create whatever the method.
	create bool
	// readOnly routes are served on the read-only port too.
	readOnly bool
	// debugging routes are off, answering 405, without
	// enable_debugging_handlers and on the read-only port.
	debugging bool
	// group, for some debugging routes, is a key of their own that turns
	// them off while enable_debugging_handlers is on.
	group   debugGroup
	handler func(h *handlers) http.Handler
}

// routes are every endpoint, upstream's paths and methods.
var routes = []route{
	{pattern: "GET /healthz", subresource: "healthz", readOnly: true, handler: (*handlers).healthz},
	{pattern: "GET /healthz/{check}", subresource: "healthz", readOnly: true, handler: (*handlers).healthz},
	{pattern: "GET /pods", subresource: "pods", readOnly: true, handler: (*handlers).pods},
	{pattern: "GET /spec/{$}", subresource: "proxy", readOnly: true, handler: (*handlers).spec},
	{pattern: stats.SummaryPath, subresource: "stats", readOnly: true, handler: (*handlers).summary},
	{pattern: "GET /metrics", subresource: "metrics", readOnly: true, handler: (*handlers).metrics},
	{pattern: "GET /metrics/cadvisor", subresource: "metrics", readOnly: true, handler: (*handlers).cadvisorMetrics},
	{pattern: "GET " + stats.ResourceMetricsPath, subresource: "metrics", readOnly: true, handler: (*handlers).resourceMetrics},
	{pattern: "GET /metrics/probes", subresource: "metrics", readOnly: true, handler: (*handlers).probeMetrics},
	{pattern: "GET /configz", subresource: "configz", handler: (*handlers).configz},
	{pattern: "GET /runningpods/{$}", subresource: "pods", debugging: true, handler: (*handlers).runningPods},
	{pattern: "GET /logs/", subresource: "log", debugging: true, handler: (*handlers).nodeLogs},
	{pattern: "GET /containerLogs/{namespace}/{pod}/{container}", subresource: "proxy", debugging: true, handler: (*handlers).containerLogs},
	{pattern: "GET /exec/{namespace}/{pod}/{container}", subresource: "proxy", create: true, debugging: true, handler: (*handlers).exec},
	{pattern: "POST /exec/{namespace}/{pod}/{container}", subresource: "proxy", create: true, debugging: true, handler: (*handlers).exec},
	{pattern: "GET /exec/{namespace}/{pod}/{uid}/{container}", subresource: "proxy", create: true, debugging: true, handler: (*handlers).exec},
	{pattern: "POST /exec/{namespace}/{pod}/{uid}/{container}", subresource: "proxy", create: true, debugging: true, handler: (*handlers).exec},
	{pattern: "GET /attach/{namespace}/{pod}/{container}", subresource: "proxy", create: true, debugging: true, handler: (*handlers).attach},
	{pattern: "POST /attach/{namespace}/{pod}/{container}", subresource: "proxy", create: true, debugging: true, handler: (*handlers).attach},
	{pattern: "GET /attach/{namespace}/{pod}/{uid}/{container}", subresource: "proxy", create: true, debugging: true, handler: (*handlers).attach},
	{pattern: "POST /attach/{namespace}/{pod}/{uid}/{container}", subresource: "proxy", create: true, debugging: true, handler: (*handlers).attach},
	{pattern: "GET /portForward/{namespace}/{pod}", subresource: "proxy", create: true, debugging: true, handler: (*handlers).portForward},
	{pattern: "POST /portForward/{namespace}/{pod}", subresource: "proxy", create: true, debugging: true, handler: (*handlers).portForward},
	{pattern: "GET /portForward/{namespace}/{pod}/{uid}", subresource: "proxy", create: true, debugging: true, handler: (*handlers).portForward},
	{pattern: "POST /portForward/{namespace}/{pod}/{uid}", subresource: "proxy", create: true, debugging: true, handler: (*handlers).portForward},
	{pattern: "POST /run/{namespace}/{pod}/{container}", subresource: "proxy", create: true, debugging: true, handler: (*handlers).run},
	{pattern: "POST /run/{namespace}/{pod}/{uid}/{container}", subresource: "proxy", create: true, debugging: true, handler: (*handlers).run},
	{pattern: "GET " + pprofPath, subresource: "proxy", debugging: true, group: profilingGroup, handler: (*handlers).profiling},
	// Every method: upstream answers those other than PUT itself (406).
	{pattern: debugFlagPath, subresource: "proxy", debugging: true, group: flagsGroup, handler: (*handlers).debugFlags},
}

// debuggingPrefixes answer 405 while the debugging routes are off, as
// upstream's InstallDebuggingDisabledHandlers (which leaves out
// /debug/flags/v: 404).
var debuggingPrefixes = []string{"/run/", "/exec/", "/attach/", "/portForward/", "/containerLogs/", "/runningpods/", pprofPath, "/logs/"}

// A debugGroup is debugging routes that a key of their own turns off while
// enable_debugging_handlers is on, as upstream's enableProfilingHandler
// and enableDebugFlagsHandler.
type debugGroup int

const (
	// ungrouped routes follow enable_debugging_handlers alone.
	ungrouped debugGroup = iota
	// profilingGroup follows enable_profiling_handler.
	profilingGroup
	// flagsGroup follows enable_debug_flags_handler.
	flagsGroup
)

// groupsOff are, for each group, the path that answers 405 with
// upstream's message while the group's key is off.
var groupsOff = []struct {
	group         debugGroup
	path, message string
}{
	{profilingGroup, pprofPath, "profiling endpoint is disabled."},
	{flagsGroup, debugFlagPath, "flags endpoint is disabled."},
}

// debugging is which debugging routes a listener serves: the config's
// keys on the secure port, none on the read-only port.
type debugging struct {
	handlers  bool // enable_debugging_handlers
	profiling bool // enable_profiling_handler
	flags     bool // enable_debug_flags_handler
}

func debuggingOf(cfg *config.Config) debugging {
	return debugging{handlers: cfg.EnableDebuggingHandlers, profiling: cfg.EnableProfilingHandler, flags: cfg.EnableDebugFlagsHandler}
}

// serves reports whether the debugging routes of g are on.
func (d debugging) serves(g debugGroup) bool {
	switch g {
	case profilingGroup:
		return d.handlers && d.profiling
	case flagsGroup:
		return d.handlers && d.flags
	}
	return d.handlers
}

// Which routes a listener serves.
type endpointSet int

const (
	secureEndpoints endpointSet = iota
	readOnlyEndpoints
)

// mux routes a listener's endpoints. The read-only port never serves the
// debugging routes.
func (h *handlers) mux(set endpointSet, dbg debugging) *http.ServeMux {
	return buildMux(set, dbg, func(r route) http.Handler { return r.handler(h) })
}

// buildMux registers the routes of set with the handlers handlerFor gives.
func buildMux(set endpointSet, dbg debugging, handlerFor func(route) http.Handler) *http.ServeMux {
	mux := http.NewServeMux()
	if set != secureEndpoints {
		dbg = debugging{}
	}
	for _, r := range routes {
		if set == readOnlyEndpoints && !r.readOnly || r.debugging && !dbg.serves(r.group) {
			continue
		}
		mux.Handle(r.pattern, handlerFor(r))
	}
	if !dbg.handlers {
		for _, p := range debuggingPrefixes {
			mux.Handle(p, disabledEndpoint("Debug endpoints are disabled."))
		}
		return mux
	}
	for _, off := range groupsOff {
		if !dbg.serves(off.group) {
			mux.Handle(off.path, disabledEndpoint(off.message))
		}
	}
	return mux
}

// disabledEndpoint answers routes that are off, as upstream: 405 with why.
func disabledEndpoint(message string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, message, http.StatusMethodNotAllowed)
	})
}

// handlers serve the endpoints from the node's parts.
type handlers struct {
	opts Options
	// cfg is the config the node API started with: its directories take
	// effect after a restart, as its listeners do (/configz shows the
	// config in force).
	cfg *config.Config
	log hclog.Logger
	// machine is read once: what it holds does not change while the
	// node runs.
	machine func() machineInfo
}

func newHandlers(opts Options, log hclog.Logger) *handlers {
	c := opts.Capacity
	return &handlers{opts: opts, cfg: opts.Config(), log: log, machine: sync.OnceValue(func() machineInfo {
		return readMachineInfo("/proc", "/sys", cpuMemory{cpuMillis: c.CPUMillis, memoryBytes: c.MemoryBytes, hugePages: c.HugePages}, opts.Identity)
	})}
}

// healthz serves /healthz and /healthz/<check> from the core's checks.
func (h *handlers) healthz() http.Handler {
	mux := http.NewServeMux()
	h.opts.Healthz.Register(mux)
	return mux
}

// The metrics endpoints: every component's registry, the prober's, and
// the stats plugin's resource metrics, as upstream serves them.
func (h *handlers) metrics() http.Handler {
	return promhttp.HandlerFor(h.opts.Metrics, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

func (h *handlers) probeMetrics() http.Handler {
	return promhttp.HandlerFor(h.opts.ProbeMetrics, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError})
}

func (h *handlers) resourceMetrics() http.Handler { return h.opts.Stats.ResourceMetricsHandler() }

func (h *handlers) summary() http.Handler { return h.opts.Stats.SummaryHandler() }
