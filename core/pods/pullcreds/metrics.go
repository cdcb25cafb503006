package pullcreds

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/microlet/microlet/internal/promreg"
)

// pluginMetrics are upstream's credential provider plugin metrics
// (pkg/credentialprovider/plugin/metrics.go), by its names.
type pluginMetrics struct {
	errors   *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

func newPluginMetrics(reg prometheus.Registerer) (*pluginMetrics, error) {
	m := &pluginMetrics{
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "kubelet", Name: "credential_provider_plugin_errors_total",
			Help: "Number of errors from credential provider plugin",
		}, []string{"plugin_name"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "credential_provider_plugin_duration",
			Help:    "Duration of execution in seconds for credential provider plugin",
			Buckets: prometheus.DefBuckets,
		}, []string{"plugin_name"}),
	}
	return m, promreg.Register(reg, m.errors, m.duration)
}
