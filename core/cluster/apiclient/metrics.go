package apiclient

import (
	"context"
	"net/url"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientmetrics "k8s.io/client-go/tools/metrics"
)

// The kubelet's API client metrics (component-base's
// metrics/prometheus/restclient, which client-go feeds): the kubelet
// dashboard's request rates by code and latencies by verb read them.
var (
	requestLatency = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "rest_client_request_duration_seconds",
		Help:    "[ALPHA] Request latency in seconds. Broken down by verb, and host.",
		Buckets: []float64{0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0},
	}, []string{"verb", "host"})
	requestResult = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "rest_client_requests_total",
		Help: "[ALPHA] Number of HTTP requests, partitioned by status code, method, and host.",
	}, []string{"code", "method", "host"})
)

// registerOnce guards client-go's metrics hooks, which are process-wide and
// take only their first registration.
var registerOnce sync.Once

// RegisterMetrics makes every API client of this process count its
// requests into reg's rest_client_* families.
func RegisterMetrics(reg prometheus.Registerer) {
	registerOnce.Do(func() {
		reg.MustRegister(requestLatency, requestResult)
		clientmetrics.Register(clientmetrics.RegisterOpts{
			RequestLatency: latencyAdapter{},
			RequestResult:  resultAdapter{},
		})
	})
}

type latencyAdapter struct{}

func (latencyAdapter) Observe(_ context.Context, verb string, u url.URL, latency time.Duration) {
	requestLatency.WithLabelValues(verb, u.Host).Observe(latency.Seconds())
}

type resultAdapter struct{}

func (resultAdapter) Increment(_ context.Context, code, method, host string) {
	requestResult.WithLabelValues(code, method, host).Inc()
}
