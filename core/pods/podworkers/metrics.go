package podworkers

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/utils/clock"

	"github.com/microlet/microlet/internal/promreg"
)

// metrics are upstream's pod worker metrics, by their names and buckets.
type metrics struct {
	workDuration     *prometheus.HistogramVec
	containersPerPod prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		workDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "pod_worker_duration_seconds",
			Help:    "Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync",
			Buckets: prometheus.DefBuckets,
		}, []string{"operation_type"}),
		containersPerPod: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "containers_per_pod_count",
			Help:    "The number of containers per pod.",
			Buckets: prometheus.ExponentialBuckets(1, 2, 5),
		}),
	}
	if err := promreg.Register(reg, m.workDuration, m.containersPerPod); err != nil {
		return nil, fmt.Errorf("podworkers: registering metrics: %w", err)
	}
	return m, nil
}

// observeWork records how long an update took to be acted on, when its
// StartTime is known.
func (m *metrics) observeWork(operation string, start time.Time, clk clock.PassiveClock) {
	if !start.IsZero() {
		m.workDuration.WithLabelValues(operation).Observe(clk.Since(start).Seconds())
	}
}
