package podruntime

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

func TestMetricsSharedByManagersOnOneRegistry(t *testing.T) {
	reg := prometheus.NewRegistry()
	first, err := newMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	second, err := newMetrics(reg)
	if err != nil {
		t.Fatalf("a second manager on the same registry: %v", err)
	}
	first.startedPods.Inc()
	second.startedPods.Inc()
	second.startedContainers.WithLabelValues(metricInitContainer).Inc()
	if got := testutil.ToFloat64(first.startedPods); got != 2 {
		t.Errorf("kubelet_started_pods_total = %v, want both managers' 2", got)
	}
	names := map[string]bool{}
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		names[f.GetName()] = true
	}
	for _, want := range []string{"kubelet_started_pods_total", "kubelet_started_containers_total"} {
		if !names[want] {
			t.Errorf("metric %s not registered (have %v)", want, names)
		}
	}
}

func TestImageSizeBucket(t *testing.T) {
	for size, want := range map[uint64]string{
		0:              "N/A",
		1:              "0-10MB",
		10 << 20:       "0-10MB",
		(10 << 20) + 1: "10MB-100MB",
		3 << 30:        "1GB-5GB",
		200 << 30:      "GT100GB",
	} {
		if got := imageSizeBucket(size); got != want {
			t.Errorf("imageSizeBucket(%d) = %q, want %q", size, got, want)
		}
	}
}
