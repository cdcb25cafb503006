// Package agent assembles the core from its config and runs it: the plugin
// host, the pod loop and the node's endpoints. It owns start-up order,
// reloads (SIGHUP or a changed config file) and shutdown.
package agent

import (
	"context"
	"fmt"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/microlet/microlet/core/cluster/apiclient"
	"github.com/microlet/microlet/core/cluster/events"
	"github.com/microlet/microlet/core/config"
	"github.com/microlet/microlet/core/logging"
	"github.com/microlet/microlet/core/nodeapi"
	"github.com/microlet/microlet/core/nodeapi/healthz"
	"github.com/microlet/microlet/core/pluginhost"
	"github.com/microlet/microlet/core/pluginhost/hostservice"
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
	healthz *healthz.Healthz
	checks  *pluginChecks
	// metrics holds every component's metrics (/metrics); probeMetrics the
	// prober's, served apart on /metrics/probes as upstream.
	metrics      *prometheus.Registry
	probeMetrics *prometheus.Registry
	pods         *pods
	// recorder records the kubelet's events (events.Nop on a standalone
	// node); nodeEvents those of the node itself.
	recorder   events.Recorder
	nodeEvents *events.Node
}

// New prepares an agent; Run starts it.
func New(cfg *config.Config, opts Options) (*Agent, error) {
	if err := os.MkdirAll(cfg.RootDir, 0o750); err != nil {
		return nil, fmt.Errorf("root dir: %w", err)
	}
	a := &Agent{opts: opts, log: opts.Logger, cfg: cfg, healthz: healthz.NewHealthz(),
		metrics: prometheus.NewRegistry(), probeMetrics: prometheus.NewRegistry()}
	// The plugin metrics read the host's slots, which exist once it does.
	pluginMetrics := nodeapi.NewPluginMetrics(func() []pluginhost.Status { return a.plugins.Status() })
	hostOpts := PluginHostOptions(cfg, a.log, hostservice.New(runtimeCalls{a}, state{a}))
	hostOpts.OnCall = pluginMetrics.ObserveCall
	host, err := pluginhost.New(hostOpts)
	if err != nil {
		return nil, fmt.Errorf("plugin host: %w", err)
	}
	a.plugins = host
	// As the kubelet's /metrics: its node name (dashboards count nodes by
	// it), the Go runtime's and the process's own.
	nodeName := prometheus.NewGauge(prometheus.GaugeOpts{
		Subsystem: "kubelet", Name: "node_name", Help: "The node's name. The count is always 1.",
		ConstLabels: prometheus.Labels{"node": cfg.NodeName},
	})
	nodeName.Set(1)
	a.metrics.MustRegister(pluginMetrics, nodeName, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	apiclient.RegisterMetrics(a.metrics)
	a.checks = &pluginChecks{healthz: a.healthz, host: host}
	return a, nil
}

// Run starts everything and blocks until ctx ends, then stops the agent's
// own processes. Pods keep running: a node agent that stops must not take
// its workloads down.
func (a *Agent) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	cluster, err := a.newCluster(ctx)
	if err != nil {
		return err
	}
	defer cluster.stop()
	if err := a.startEvents(ctx, cluster); err != nil {
		return err
	}
	pods, err := a.newPods(ctx, a.metrics, cluster)
	if err != nil {
		return err
	}
	a.pods = pods
	a.healthz.Add("syncloop", pods.loop.Healthy)
	a.healthz.Add("pleg", func() error { _, err := pods.pleg.Healthy(); return err })
	a.healthz.Add("runtime", pods.health.RuntimeErr)

	api, err := a.newNodeAPI(pods, cluster)
	if err != nil {
		return err
	}
	if err := api.Start(); err != nil {
		return err
	}
	go trackPodStarts(ctx, pods.statuses, pods.loop, a.metrics)

	if err := a.plugins.Reconcile(ctx, PluginSpecs(a.cfg)); err != nil {
		// A plugin that cannot start leaves its kind to the fallback; the
		// agent runs on.
		a.log.Error("some plugins did not start; their kinds use the fallback", "error", err)
	}
	a.checks.sync()
	a.logPlugins()
	if pods.shutdown.Enabled() {
		// As the kubelet: a node that cannot hold its shutdown back does
		// not start.
		if err := pods.shutdown.Start(ctx); err != nil {
			return fmt.Errorf("graceful node shutdown: %w", err)
		}
	}
	pods.run(ctx)
	go a.servePodResources(ctx, pods)
	if cluster != nil && a.cfg.RegisterNode {
		a.runNodeStatus(ctx, cluster, pods)
	}

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
	_ = api.Shutdown(shutdown)
	wg.Wait()
	return a.plugins.Close(shutdown)
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
