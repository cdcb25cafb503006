package nodeapi

import (
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/microlet/microlet/internal/promreg"
)

// Server types, upstream's server_type label.
const (
	serverReadWrite = "readwrite"
	serverReadOnly  = "readonly"
)

// requestPathBuckets are the path label's values (upstream's metrics
// buckets); any other path counts as "other".
var requestPathBuckets = map[string]bool{
	"healthz": true, "pods": true, "stats": true, "metrics": true, "metrics/cadvisor": true, "metrics/probes": true,
	"metrics/resource": true, "spec": true, "run": true, "exec": true, "attach": true, "portForward": true,
	"containerLogs": true, "configz": true, "runningpods": true, "logs": true, "debug": true,
}

// requestMethods are the method label's values; others count as "other".
var requestMethods = map[string]bool{
	"OPTIONS": true, "GET": true, "HEAD": true, "POST": true, "PUT": true, "DELETE": true, "TRACE": true, "CONNECT": true,
}

// longRunning paths hold a stream open, or, for debug, may run for
// minutes (a CPU profile or trace for ?seconds=).
var longRunning = map[string]bool{"exec": true, "attach": true, "portForward": true, "debug": true}

// requestMetrics are upstream's kubelet_http_* metrics
// (pkg/kubelet/server/metrics).
type requestMetrics struct {
	total    *prometheus.CounterVec
	duration *prometheus.HistogramVec
	inflight *prometheus.GaugeVec
}

func newRequestMetrics(reg prometheus.Registerer) (*requestMetrics, error) {
	labels := []string{"method", "path", "server_type", "long_running"}
	m := &requestMetrics{
		total: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "kubelet", Name: "http_requests_total",
			Help: "[ALPHA] Number of the http requests received since the server started",
		}, labels),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "http_requests_duration_seconds",
			Help: "[ALPHA] Duration in seconds to serve http requests", Buckets: prometheus.DefBuckets,
		}, labels),
		inflight: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "kubelet", Name: "http_inflight_requests",
			Help: "[ALPHA] Number of the inflight http requests",
		}, labels),
	}
	if err := promreg.Register(reg, m.total, m.duration, m.inflight); err != nil {
		return nil, err
	}
	return m, nil
}

// wrap counts and times every request next serves.
func (m *requestMetrics) wrap(next http.Handler, serverType string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		method := r.Method
		if !requestMethods[method] {
			method = "other"
		}
		path := pathBucket(r.URL.Path)
		labels := prometheus.Labels{"method": method, "path": path, "server_type": serverType,
			"long_running": strconv.FormatBool(longRunning[path])}
		m.total.With(labels).Inc()
		inflight := m.inflight.With(labels)
		inflight.Inc()
		defer inflight.Dec()
		start := time.Now()
		defer func() { m.duration.With(labels).Observe(time.Since(start).Seconds()) }()
		next.ServeHTTP(w, r)
	})
}

// pathBucket is upstream's getURLRootPath, limited to the known buckets:
// "metrics/<x>" for the metrics endpoints, else the first segment.
func pathBucket(path string) string {
	parts := strings.SplitN(strings.TrimPrefix(path, "/"), "/", 3)
	root := parts[0]
	if root == "metrics" && len(parts) > 1 {
		root += "/" + parts[1]
	}
	if requestPathBuckets[root] {
		return root
	}
	return "other"
}
