package nodeapi

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/microlet/microlet/core/pluginhost"
)

// pluginCallBuckets span plugin calls: a tenth of a millisecond on a quiet
// node to the default call timeout of 2s.
var pluginCallBuckets = []float64{0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5}

var (
	pluginUpDesc = prometheus.NewDesc("microlet_plugin_up",
		"1 when the plugin slot has a process serving, 0 while it starts, restarts or has failed.", []string{"kind", "name"}, nil)
	pluginRestartsDesc = prometheus.NewDesc("microlet_plugin_restarts_total",
		"Restarts of the plugin slot's process after it exited or hung.", []string{"kind", "name"}, nil)
	pluginSwapsDesc = prometheus.NewDesc("microlet_plugin_swaps_total",
		"Hot swaps of the plugin slot's process for a new binary or config.", []string{"kind", "name"}, nil)
	pluginConfigAppliedDesc = prometheus.NewDesc("microlet_plugin_config_applied",
		"0 when the plugin slot's process serves something other than the config asks for (a swap to it failed), else 1.", []string{"kind", "name"}, nil)
)

// PluginMetrics are the plugin host's metrics: each slot's state, restarts
// and swaps, read from the host at each scrape, and the duration of every
// call to a plugin process, which ObserveCall records (the host's OnCall).
type PluginMetrics struct {
	status func() []pluginhost.Status
	calls  *prometheus.HistogramVec
}

// NewPluginMetrics reads the slots from status (the host's Status).
func NewPluginMetrics(status func() []pluginhost.Status) *PluginMetrics {
	return &PluginMetrics{status: status, calls: prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "microlet_plugin_call_duration_seconds",
		Help:    "Duration of calls from the core to plugin processes, by gRPC method; a stream's until it ended.",
		Buckets: pluginCallBuckets,
	}, []string{"kind", "name", "method"})}
}

// ObserveCall records a finished call.
func (m *PluginMetrics) ObserveCall(c pluginhost.FinishedCall) {
	m.calls.WithLabelValues(string(c.Kind), c.Name, c.Method).Observe(c.Duration.Seconds())
}

func (m *PluginMetrics) Describe(ch chan<- *prometheus.Desc) {
	ch <- pluginUpDesc
	ch <- pluginRestartsDesc
	ch <- pluginSwapsDesc
	ch <- pluginConfigAppliedDesc
	m.calls.Describe(ch)
}

func (m *PluginMetrics) Collect(ch chan<- prometheus.Metric) {
	for _, st := range m.status() {
		up := 0.0
		if st.State == pluginhost.Serving {
			up = 1
		}
		kind := string(st.Kind)
		ch <- prometheus.MustNewConstMetric(pluginUpDesc, prometheus.GaugeValue, up, kind, st.Name)
		ch <- prometheus.MustNewConstMetric(pluginRestartsDesc, prometheus.CounterValue, float64(st.Restarts), kind, st.Name)
		ch <- prometheus.MustNewConstMetric(pluginSwapsDesc, prometheus.CounterValue, float64(st.Swaps), kind, st.Name)
		applied := 1.0
		if st.ConfigNotApplied != "" {
			applied = 0
		}
		ch <- prometheus.MustNewConstMetric(pluginConfigAppliedDesc, prometheus.GaugeValue, applied, kind, st.Name)
	}
	m.calls.Collect(ch)
}
