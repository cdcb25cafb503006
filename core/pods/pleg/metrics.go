package pleg

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/microlet/microlet/core/runtime/container"
	"github.com/microlet/microlet/internal/promreg"
)

// metrics are upstream's PLEG metrics (pkg/kubelet/metrics/metrics.go),
// with their names, help and buckets, plus the running pod and container
// gauges that upstream's PLEG maintains.
type metrics struct {
	relistDuration    prometheus.Histogram
	relistInterval    prometheus.Histogram
	lastSeen          prometheus.Gauge
	discardEvents     prometheus.Counter
	eventedConnErr    prometheus.Counter
	eventedConn       prometheus.Counter
	eventedLatency    prometheus.Histogram
	runningPods       prometheus.Gauge
	runningContainers *prometheus.GaugeVec
}

// containerStates are the label values of kubelet_running_containers.
var containerStates = []container.State{container.StateCreated, container.StateRunning, container.StateExited, container.StateUnknown}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		relistDuration: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "pleg_relist_duration_seconds",
			Help:    "Duration in seconds for relisting pods in PLEG.",
			Buckets: prometheus.DefBuckets,
		}),
		relistInterval: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "pleg_relist_interval_seconds",
			Help:    "Interval in seconds between relisting in PLEG.",
			Buckets: prometheus.DefBuckets,
		}),
		lastSeen: prometheus.NewGauge(prometheus.GaugeOpts{
			Subsystem: "kubelet", Name: "pleg_last_seen_seconds",
			Help: "Timestamp in seconds when PLEG was last seen active.",
		}),
		discardEvents: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: "kubelet", Name: "pleg_discard_events",
			Help: "The number of discard events in PLEG.",
		}),
		eventedConnErr: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: "kubelet", Name: "evented_pleg_connection_error_count",
			Help: "The number of errors encountered during the establishment of streaming connection with the CRI runtime.",
		}),
		eventedConn: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: "kubelet", Name: "evented_pleg_connection_success_count",
			Help: "The number of times a streaming client was obtained to receive CRI Events.",
		}),
		eventedLatency: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "evented_pleg_connection_latency_seconds",
			Help:    "The latency of streaming connection with the CRI runtime, measured in seconds.",
			Buckets: prometheus.DefBuckets,
		}),
		runningPods: prometheus.NewGauge(prometheus.GaugeOpts{
			Subsystem: "kubelet", Name: "running_pods",
			Help: "Number of pods that have a running pod sandbox",
		}),
		runningContainers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "kubelet", Name: "running_containers",
			Help: "Number of containers currently running",
		}, []string{"container_state"}),
	}
	if err := promreg.Register(reg, m.relistDuration, m.relistInterval, m.lastSeen, m.discardEvents,
		m.eventedConnErr, m.eventedConn, m.eventedLatency, m.runningPods, m.runningContainers); err != nil {
		return nil, fmt.Errorf("pleg: registering metrics: %w", err)
	}
	return m, nil
}

// setRunning counts the listed pods with a ready sandbox and the listed
// containers by state. Unlike upstream, states with no container left are
// set to 0 rather than left at their last count.
func (m *metrics) setRunning(pods []*container.Pod) {
	running := 0
	counts := map[container.State]int{}
	for _, pod := range pods {
		for _, c := range pod.Containers {
			counts[c.State]++
		}
		for _, s := range pod.Sandboxes {
			if s.State == container.SandboxReady {
				running++
				break
			}
		}
	}
	m.runningPods.Set(float64(running))
	for _, s := range containerStates {
		m.runningContainers.WithLabelValues(string(s)).Set(float64(counts[s]))
	}
}

// adjustRunning applies the difference between a pod's cached status and
// the one an event brought, as upstream's evented PLEG does between
// relists.
func (m *metrics) adjustRunning(old, current *container.PodStatus) {
	wasRunning, isRunning := sandboxRunning(old), sandboxRunning(current)
	switch {
	case wasRunning && !isRunning:
		m.runningPods.Dec()
	case !wasRunning && isRunning:
		m.runningPods.Inc()
	}
	before, after := countStates(old), countStates(current)
	for _, s := range containerStates {
		if d := after[s] - before[s]; d != 0 {
			m.runningContainers.WithLabelValues(string(s)).Add(float64(d))
		}
	}
}

func sandboxRunning(s *container.PodStatus) bool {
	return s != nil && len(s.Sandboxes) > 0 && s.Sandboxes[0].State == container.SandboxReady
}

func countStates(s *container.PodStatus) map[container.State]int {
	counts := map[container.State]int{}
	if s == nil {
		return counts
	}
	for _, c := range s.Containers {
		counts[c.State]++
	}
	return counts
}
