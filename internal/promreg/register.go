// Package promreg holds what the core's packages share about their
// Prometheus metrics.
package promreg

import "github.com/prometheus/client_golang/prometheus"

// Register registers every collector on reg, stopping at the first error.
// A nil reg registers nothing: a component built without a registry (a
// unit test, say) keeps its metrics to itself.
func Register(reg prometheus.Registerer, collectors ...prometheus.Collector) error {
	if reg == nil {
		return nil
	}
	for _, c := range collectors {
		if err := reg.Register(c); err != nil {
			return err
		}
	}
	return nil
}
