package eviction

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/microlet/microlet/internal/promreg"
)

// metrics are the manager's Prometheus metrics.
type metrics struct {
	// evictions is upstream's kubelet_evictions (pkg/kubelet/metrics).
	evictions *prometheus.CounterVec
	// cycles counts cycles, so that a missed one shows.
	cycles *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "kubelet",
			Name:      "evictions",
			Help:      "Cumulative number of pod evictions by eviction signal",
		}, []string{"eviction_signal"}),
		cycles: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "microlet",
			Name:      "eviction_cycles_total",
			Help:      "Eviction cycles run, by the strategy that decided (the eviction plugin's name, or builtin) and what started the cycle (periodic, memory_notification).",
		}, []string{"strategy", "trigger"}),
	}
	if err := promreg.Register(reg, m.evictions, m.cycles); err != nil {
		return nil, fmt.Errorf("eviction metrics: %w", err)
	}
	return m, nil
}
