package podruntime

import (
	"errors"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Container types, the container_type label values of upstream's metrics.
const (
	metricContainer          = "container"
	metricInitContainer      = "init_container"
	metricEphemeralContainer = "ephemeral_container"
)

// imageSizeBuckets label image_pull_duration_seconds by image size, as
// upstream's imageSizeBuckets.
var imageSizeBuckets = []struct {
	lowerBound uint64
	label      string
}{
	{0, "0-10MB"},
	{10 << 20, "10MB-100MB"},
	{100 << 20, "100MB-500MB"},
	{500 << 20, "500MB-1GB"},
	{1 << 30, "1GB-5GB"},
	{5 << 30, "5GB-10GB"},
	{10 << 30, "10GB-20GB"},
	{20 << 30, "20GB-30GB"},
	{30 << 30, "30GB-40GB"},
	{40 << 30, "40GB-60GB"},
	{60 << 30, "60GB-100GB"},
	{100 << 30, "GT100GB"},
}

// metrics are the runtime manager's metrics, by the kubelet's names
// (pkg/kubelet/metrics). The kubelet_runtime_operations_* family counts CRI
// calls and belongs with the CRI client, which every caller shares.
type metrics struct {
	startedPods            prometheus.Counter
	startedPodsErrors      prometheus.Counter
	startedContainers      *prometheus.CounterVec
	startedContainersError *prometheus.CounterVec
	imagePullDuration      *prometheus.HistogramVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		startedPods: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: "kubelet", Name: "started_pods_total",
			Help: "Cumulative number of pods started",
		}),
		startedPodsErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: "kubelet", Name: "started_pods_errors_total",
			Help: "Cumulative number of errors when starting pods",
		}),
		startedContainers: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "kubelet", Name: "started_containers_total",
			Help: "Cumulative number of containers started",
		}, []string{"container_type"}),
		startedContainersError: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "kubelet", Name: "started_containers_errors_total",
			Help: "Cumulative number of errors when starting containers",
		}, []string{"container_type", "code"}),
		imagePullDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Subsystem: "kubelet", Name: "image_pull_duration_seconds",
			Help:    "Duration in seconds to pull an image.",
			Buckets: []float64{1, 5, 10, 20, 30, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600},
		}, []string{"image_size_in_bytes"}),
	}
	if reg == nil {
		return m, nil
	}
	var errs [5]error
	m.startedPods, errs[0] = registerOrReuse(reg, m.startedPods)
	m.startedPodsErrors, errs[1] = registerOrReuse(reg, m.startedPodsErrors)
	m.startedContainers, errs[2] = registerOrReuse(reg, m.startedContainers)
	m.startedContainersError, errs[3] = registerOrReuse(reg, m.startedContainersError)
	m.imagePullDuration, errs[4] = registerOrReuse(reg, m.imagePullDuration)
	if err := errors.Join(errs[:]...); err != nil {
		return nil, fmt.Errorf("podruntime: registering metrics: %w", err)
	}
	return m, nil
}

// registerOrReuse registers c, or returns the collector already registered
// under its name: a second manager on the same registry (the core
// restarting its runtime manager) shares the first one's.
func registerOrReuse[T prometheus.Collector](reg prometheus.Registerer, c T) (T, error) {
	err := reg.Register(c)
	if err == nil {
		return c, nil
	}
	var already prometheus.AlreadyRegisteredError
	if errors.As(err, &already) {
		if existing, ok := already.ExistingCollector.(T); ok {
			return existing, nil
		}
	}
	return c, err
}

// observeImagePull records a successful pull.
func (m *metrics) observeImagePull(size uint64, d time.Duration) {
	m.imagePullDuration.WithLabelValues(imageSizeBucket(size)).Observe(d.Seconds())
}

// imageSizeBucket is upstream's GetImageSizeBucket.
func imageSizeBucket(size uint64) string {
	if size == 0 {
		return "N/A"
	}
	for i := len(imageSizeBuckets) - 1; i >= 0; i-- {
		if size > imageSizeBuckets[i].lowerBound {
			return imageSizeBuckets[i].label
		}
	}
	return ""
}
