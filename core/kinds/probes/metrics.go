package probes

import (
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/internal/promreg"
	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
)

// metrics are upstream's prober metrics (pkg/kubelet/prober/
// prober_manager.go), with their names, labels, help as served (stability
// level included) and default buckets.
type metrics struct {
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec
}

// attemptLabels are upstream's values of the result label.
var attemptLabels = map[probesv1.Result]string{
	probesv1.Result_RESULT_SUCCESS: "successful",
	probesv1.Result_RESULT_FAILURE: "failed",
	probesv1.Result_RESULT_UNKNOWN: "unknown",
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "prober", Name: "probe_total",
			Help: "[BETA] Cumulative number of a liveness, readiness or startup probe for a container by result.",
		}, []string{"probe_type", "result", "container", "pod", "namespace", "pod_uid"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "prober", Name: "probe_duration_seconds",
			Help:    "[ALPHA] Duration in seconds for a probe response.",
			Buckets: prometheus.DefBuckets,
		}, []string{"probe_type", "container", "pod", "namespace"}),
	}
	if err := promreg.Register(reg, m.total, m.duration); err != nil {
		return nil, fmt.Errorf("prober: registering metrics: %w", err)
	}
	return m, nil
}

// observe counts one attempt of a container's probe. As upstream, the
// duration of successful and unknown attempts is observed, not that of
// failed ones. A restatement of a standing verdict (attempt
// RESULT_UNSPECIFIED) is no attempt.
func (m *metrics) observe(t ProbeType, e *containerEntry, attempt probesv1.Result, d time.Duration) {
	result, ok := attemptLabels[attempt]
	if !ok {
		return
	}
	m.total.WithLabelValues(t.String(), result, e.name, e.podName, e.podNamespace, string(e.podUID)).Inc()
	if attempt != probesv1.Result_RESULT_FAILURE {
		m.duration.WithLabelValues(t.String(), e.name, e.podName, e.podNamespace).Observe(d.Seconds())
	}
}

// forgetPod drops the series of a removed pod, as upstream's workers do
// when they stop.
func (m *metrics) forgetPod(uid types.UID, name, namespace string) {
	m.total.DeletePartialMatch(prometheus.Labels{"pod_uid": string(uid)})
	m.duration.DeletePartialMatch(prometheus.Labels{"pod": name, "namespace": namespace})
}
