// Package agent assembles the core from its config and runs it: the plugin
// host, the pod loop and the node's endpoints. It owns start-up order,
// reloads (SIGHUP or a changed config file) and shutdown.
package agent

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/microlet/microlet/core/config"
	"github.com/microlet/microlet/core/hostservice"
	"github.com/microlet/microlet/core/logging"
	"github.com/microlet/microlet/core/pluginhost"
	"github.com/microlet/microlet/core/server"
	"github.com/microlet/microlet/core/stats"
)

// Options say how the agent was configured, so it can load its config again.
type Options struct {
	Load   config.LoadOptions
	Logger hclog.InterceptLogger
}

// Agent is a running core.
type Agent struct {
	opts Options
	log  hclog.InterceptLogger

	mu  sync.Mutex // guards cfg during reloads
	cfg *config.Config

	plugins *pluginhost.Host
	healthz *server.Healthz
	checks  *pluginChecks
	// metrics holds every component's metrics (/metrics); probeMetrics the
	// prober's, served apart on /metrics/probes as upstream.
	metrics      *prometheus.Registry
	probeMetrics *prometheus.Registry
	pods         *pods
}

// New prepares an agent; Run starts it.
func New(cfg *config.Config, opts Options) (*Agent, error) {
	if err := os.MkdirAll(cfg.RootDir, 0o750); err != nil {
		return nil, fmt.Errorf("root dir: %w", err)
	}
	a := &Agent{opts: opts, log: opts.Logger, cfg: cfg, healthz: server.NewHealthz(),
		metrics: prometheus.NewRegistry(), probeMetrics: prometheus.NewRegistry()}
	host, err := pluginhost.New(PluginHostOptions(cfg, a.log, hostservice.New(runtimeCalls{a}, state{a})))
	if err != nil {
		return nil, fmt.Errorf("plugin host: %w", err)
	}
	a.plugins = host
	a.checks = &pluginChecks{healthz: a.healthz, host: host}
	return a, nil
}

// Run starts everything and blocks until ctx ends, then stops the agent's
// own processes. Pods keep running: a node agent that stops must not take
// its workloads down.
func (a *Agent) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	pods, err := a.newPods(ctx, a.metrics)
	if err != nil {
		return err
	}
	a.pods = pods
	a.healthz.Add("syncloop", pods.loop.Healthy)
	a.healthz.Add("pleg", func() error { _, err := pods.pleg.Healthy(); return err })
	a.healthz.Add("runtime", pods.health.RuntimeErr)

	srv, err := a.serveHealthz()
	if err != nil {
		return err
	}

	if err := a.plugins.Reconcile(ctx, PluginSpecs(a.cfg)); err != nil {
		// A plugin that cannot start leaves its kind to the fallback; the
		// agent runs on.
		a.log.Error("some plugins did not start; their kinds use the fallback", "error", err)
	}
	a.checks.sync()
	a.logPlugins()
	pods.run(ctx)

	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		a.watchConfig(ctx)
	}()

	<-ctx.Done()
	a.log.Info("stopping")
	shutdown, stop := context.WithTimeout(context.Background(), 10*time.Second)
	defer stop()
	if srv != nil {
		_ = srv.Shutdown(shutdown)
	}
	wg.Wait()
	return a.plugins.Close(shutdown)
}

// serveHealthz listens on healthz_bind_address:healthz_port (0: off).
func (a *Agent) serveHealthz() (*http.Server, error) {
	if a.cfg.HealthzPort == 0 {
		return nil, nil
	}
	addr := net.JoinHostPort(a.cfg.HealthzBindAddress, strconv.Itoa(a.cfg.HealthzPort))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("healthz: %w", err)
	}
	mux := http.NewServeMux()
	a.healthz.Register(mux)
	// The local /pods, stats and metrics, until the node API (with
	// authentication) serves them.
	mux.Handle("GET /pods", server.PodsHandler(a.pods.loop.PodsWithStatus))
	mux.Handle(stats.SummaryPath, a.pods.stats.SummaryHandler())
	mux.Handle("GET "+stats.ResourceMetricsPath, a.pods.stats.ResourceMetricsHandler())
	mux.Handle("GET /metrics", promhttp.HandlerFor(a.metrics, promhttp.HandlerOpts{}))
	mux.Handle("GET /metrics/probes", promhttp.HandlerFor(a.probeMetrics, promhttp.HandlerOpts{}))
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go func() {
		if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			a.log.Error("healthz server stopped", "error", err)
		}
	}()
	a.log.Info("serving healthz and pods", "healthz", "http://"+addr+"/healthz", "pods", "http://"+addr+"/pods")
	return srv, nil
}

// logPlugins says which plugins serve, so an operator sees them come up.
func (a *Agent) logPlugins() {
	for _, st := range a.plugins.Status() {
		a.log.Info("plugin", "kind", st.Kind, "name", st.Name, "state", st.State.String(),
			"pid", st.PID, "version", st.PluginVersion, "api", st.APIVersion, "error", st.LastError)
	}
}

// Reload loads the config again and applies what can change at runtime: the
// log level and the plugin blocks (hot swap). A config with errors is
// refused whole and the running one stays.
func (a *Agent) Reload(ctx context.Context) {
	next, err := config.Load(a.opts.Load)
	if err != nil {
		a.log.Error("config reload refused; keeping the running config", "error", err)
		return
	}
	a.mu.Lock()
	prev := a.cfg
	a.cfg = next
	a.mu.Unlock()

	if err := logging.SetLevel(a.log, next.LogLevel); err != nil {
		a.log.Error("log level", "error", err)
	}
	for _, key := range restartOnlyChanges(prev, next) {
		a.log.Warn("config key changed; it takes effect after a restart", "key", key)
	}
	if err := a.plugins.Reconcile(ctx, PluginSpecs(next)); err != nil {
		a.log.Error("plugin reconcile after reload", "error", err)
	}
	a.checks.sync()
	a.logPlugins()
}
