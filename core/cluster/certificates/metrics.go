package certificates

import (
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/certificate"

	"github.com/microlet/microlet/internal/promreg"
)

// The kubelet's certificate metrics (pkg/kubelet/certificate and
// cmd/kubelet/app), by their names: the stock alerts on certificate
// expiry and renewal errors (kube-prometheus' KubeletClientCertificate*,
// KubeletServerCertificate*) read them.

// managerMetrics are one certificate manager's metrics: a renewal error
// counter, the seconds until its certificate expires, and for the
// serving certificate how long each lived before it was rotated.
type managerMetrics struct {
	renewErrors prometheus.Counter
	rotation    prometheus.Histogram
	manager     certificate.Manager
}

func clientMetrics() *managerMetrics {
	return &managerMetrics{renewErrors: prometheus.NewCounter(prometheus.CounterOpts{
		Namespace: "kubelet", Subsystem: "certificate_manager", Name: "client_expiration_renew_errors",
		Help: "Counter of certificate renewal errors.",
	})}
}

func servingMetrics() *managerMetrics {
	return &managerMetrics{
		renewErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: "kubelet", Name: "server_expiration_renew_errors",
			Help: "Counter of certificate renewal errors.",
		}),
		rotation: prometheus.NewHistogram(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "certificate_manager_server_rotation_seconds",
			Help: "Histogram of the number of seconds the previous certificate lived before being rotated.",
			// 1 minute, 1 hour, 4 hours, 1 day, 1 week, 1, 3 and 6
			// months, 1 and 4 years: the kubelet's.
			Buckets: []float64{60, 3600, 14400, 86400, 604800, 2592000, 7776000, 15552000, 31104000, 124416000},
		}),
	}
}

// register adds the metrics of manager m to reg (nothing without one);
// which is "client" or "server".
func (mm *managerMetrics) register(reg prometheus.Registerer, which string, m certificate.Manager) error {
	mm.manager = m
	ttl := prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Subsystem: "kubelet", Name: "certificate_manager_" + which + "_ttl_seconds",
		Help: "Gauge of the TTL (time-to-live) of the Kubelet's " + which + " certificate. " +
			"The value is in seconds until certificate expiry (negative if already expired). " +
			"If the certificate is invalid or unused, the value will be +INF.",
	}, mm.ttl)
	collectors := []prometheus.Collector{mm.renewErrors, ttl}
	if mm.rotation != nil {
		collectors = append(collectors, mm.rotation)
	}
	return promreg.Register(reg, collectors...)
}

func (mm *managerMetrics) ttl() float64 {
	if c := mm.manager.Current(); c != nil && c.Leaf != nil {
		return math.Trunc(time.Until(c.Leaf.NotAfter).Seconds())
	}
	return math.Inf(1)
}

// config sets the manager config's metrics.
func (mm *managerMetrics) config(c *certificate.Config) *certificate.Config {
	c.CertificateRenewFailure = mm.renewErrors
	if mm.rotation != nil {
		c.CertificateRotation = mm.rotation
	}
	return c
}
