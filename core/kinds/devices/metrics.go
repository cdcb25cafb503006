package devices

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/microlet/microlet/internal/promreg"
)

// metrics are the kubelet's device plugin metrics (pkg/kubelet/metrics),
// which let an operator without an API server see which extended resources
// the node's plugins offer and how long their Allocate takes.
type metrics struct {
	// registrations is upstream's device_plugin_registration_total. The
	// kubelet counts Register calls; here a resource counts when a devices
	// plugin starts offering it: its first report, and again after its
	// plugin was removed or the core restarted (a vendor plugin behind the
	// bridge offers its resource only once it registered with the bridge's
	// new process). A re-registration the bridge absorbs, keeping the
	// resource offered, does not count.
	registrations *prometheus.CounterVec
	// allocDuration is upstream's device_plugin_alloc_duration_seconds: a
	// plugin's Allocate as the core timed it, errors included.
	allocDuration *prometheus.HistogramVec
	// sharedPaths counts allocations that handed out a host device node
	// another resource had handed out too and still holds: two plugins (or
	// two resources of one) offer the same node, each counting it as its
	// own, so the node's capacity is counted twice. Such allocations are
	// not refused: many nodes are made to be shared (/dev/net/tun,
	// /dev/fuse, /dev/kvm), and a refusal would stop pods that run well;
	// the operator is told instead (warnSharedPaths).
	sharedPaths *prometheus.CounterVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		registrations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "kubelet", Name: "device_plugin_registration_total",
			Help: "Cumulative number of device plugin registrations. Broken down by resource name.",
		}, []string{"resource_name"}),
		allocDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "device_plugin_alloc_duration_seconds",
			Help:    "Duration in seconds to serve a device plugin Allocation request. Broken down by resource name.",
			Buckets: prometheus.DefBuckets,
		}, []string{"resource_name"}),
		sharedPaths: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "microlet", Name: "device_shared_host_paths_total",
			Help: "Device allocations that handed out a host device node another resource holds allocated too, by the allocated resource.",
		}, []string{"resource"}),
	}
	return m, promreg.Register(reg, m.sharedPaths, m.registrations, m.allocDuration)
}

// observeAllocate records one Allocate call that started at start.
func (m *metrics) observeAllocate(resource string, start time.Time) {
	m.allocDuration.WithLabelValues(resource).Observe(time.Since(start).Seconds())
}
