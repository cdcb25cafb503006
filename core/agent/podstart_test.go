package agent

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/pods/podspec"
	"github.com/microlet/microlet/core/pods/status"
)

func TestPodStarts(t *testing.T) {
	t0 := time.Date(2024, 5, 1, 10, 0, 0, 0, time.UTC)
	pod := func(uid string, seen time.Time) *v1.Pod {
		return &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid),
			Annotations: map[string]string{podspec.ConfigFirstSeenAnnotationKey: seen.Format(time.RFC3339Nano)}}}
	}
	running := v1.ContainerState{Running: &v1.ContainerStateRunning{}}
	waiting := v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ContainerCreating"}}
	st := func(uid string, phase v1.PodPhase, states ...v1.ContainerState) status.VersionedPodStatus {
		s := status.VersionedPodStatus{UID: types.UID(uid), Status: v1.PodStatus{Phase: phase}}
		for _, c := range states {
			s.Status.ContainerStatuses = append(s.Status.ContainerStatuses, v1.ContainerStatus{State: c})
		}
		return s
	}

	reg := prometheus.NewRegistry()
	p := newPodStarts(reg)
	desired := []*v1.Pod{pod("a", t0), pod("b", t0.Add(time.Second))}

	p.observe([]status.VersionedPodStatus{st("a", v1.PodPending, waiting), st("b", v1.PodRunning, running, waiting)}, desired, t0.Add(time.Second))
	if n := testutil.CollectAndCount(reg); n != 1 || histogramCount(t, reg) != 0 {
		t.Fatalf("pending pods and pods with a container not running were observed: %d samples", histogramCount(t, reg))
	}
	p.observe([]status.VersionedPodStatus{st("a", v1.PodRunning, running), st("b", v1.PodRunning, running, waiting)}, desired, t0.Add(3*time.Second))
	p.observe([]status.VersionedPodStatus{st("a", v1.PodRunning, running), st("b", v1.PodRunning, running, running)}, desired, t0.Add(5*time.Second))
	p.observe([]status.VersionedPodStatus{st("a", v1.PodRunning, running), st("b", v1.PodRunning, running, running)}, desired, t0.Add(9*time.Second))
	if n := histogramCount(t, reg); n != 2 {
		t.Fatalf("%d pod starts observed, want 2 (each pod once)", n)
	}
	if sum := histogramSum(t, reg); sum != 3+4 {
		t.Errorf("sum of start durations %v, want 7s (a after 3s, b after 4s)", sum)
	}

	// A pod gone and back (a new status) is observed again; a running pod
	// without a first-seen time is not.
	p.observe(nil, nil, t0.Add(10*time.Second))
	p.observe([]status.VersionedPodStatus{st("a", v1.PodRunning, running), st("c", v1.PodRunning, running)}, desired, t0.Add(11*time.Second))
	if n := histogramCount(t, reg); n != 3 {
		t.Errorf("%d pod starts observed, want 3", n)
	}
}

func histogramCount(t *testing.T, reg *prometheus.Registry) uint64 {
	t.Helper()
	return histogram(t, reg).GetSampleCount()
}

func histogramSum(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	return histogram(t, reg).GetSampleSum()
}

func histogram(t *testing.T, reg *prometheus.Registry) interface {
	GetSampleCount() uint64
	GetSampleSum() float64
} {
	t.Helper()
	families, err := reg.Gather()
	if err != nil || len(families) != 1 || families[0].GetName() != "kubelet_pod_start_duration_seconds" {
		t.Fatalf("gathered %v, %v", families, err)
	}
	return families[0].GetMetric()[0].GetHistogram()
}
