package syncloop

import (
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/pods/podworkers"
	"github.com/microlet/microlet/core/pods/status"
	"github.com/microlet/microlet/internal/promreg"
)

// podCounts is the kubelet's accounting of pods, recorded at every
// housekeeping as upstream's HandlePodCleanups records it:
// kubelet_desired_pods and kubelet_active_pods by static,
// kubelet_working_pods by lifecycle, config and static,
// kubelet_restarted_pods_total by static and
// kubelet_orphaned_runtime_pods_total. static is "true" for a pod that did
// not come from an API server, which is every pod until the API server
// source exists.
type podCounts struct {
	desired, active, working *prometheus.GaugeVec
	restarted                *prometheus.CounterVec
	orphaned                 prometheus.Counter
}

func newPodCounts(reg prometheus.Registerer) (*podCounts, error) {
	m := &podCounts{
		desired: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "kubelet", Name: "desired_pods",
			Help: "The number of pods the kubelet is being instructed to run. static is true if the pod is not from the apiserver.",
		}, []string{"static"}),
		active: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "kubelet", Name: "active_pods",
			Help: "The number of pods the kubelet considers active and which are being considered when admitting new pods. static is true if the pod is not from the apiserver.",
		}, []string{"static"}),
		working: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Subsystem: "kubelet", Name: "working_pods",
			Help: "Number of pods the kubelet is actually running, broken down by lifecycle phase, whether the pod is desired, orphaned, or runtime only (also orphaned), and whether the pod is static.",
		}, []string{"lifecycle", "config", "static"}),
		restarted: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "kubelet", Name: "restarted_pods_total",
			Help: "Number of pods that have been restarted because they were deleted and recreated with the same UID while the kubelet was watching them (common for static pods, extremely uncommon for API pods)",
		}, []string{"static"}),
		orphaned: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: "kubelet", Name: "orphaned_runtime_pods_total",
			Help: "Number of pods that have been detected in the container runtime without being already known to the pod worker.",
		}),
	}
	// Upstream's series exist from the start, at zero.
	for _, static := range []string{"", "true"} {
		m.restarted.WithLabelValues(static)
	}
	if err := promreg.Register(reg, m.desired, m.active, m.working, m.restarted, m.orphaned); err != nil {
		return nil, err
	}
	return m, nil
}

// recordPods counts the desired and the active pods.
func (m *podCounts) recordPods(desired, active []*v1.Pod) {
	for gauge, pods := range map[*prometheus.GaugeVec][]*v1.Pod{m.desired: desired, m.active: active} {
		static := 0
		for _, pod := range pods {
			if status.IsStaticPod(pod) {
				static++
			}
		}
		gauge.WithLabelValues("true").Set(float64(static))
		gauge.WithLabelValues("").Set(float64(len(pods) - static))
	}
}

// restartedPod counts a desired pod the workers did not know, started
// again.
func (m *podCounts) restartedPod(pod *v1.Pod) {
	m.restarted.WithLabelValues(staticLabel(status.IsStaticPod(pod))).Inc()
}

// workingConfigs are upstream's valid worker kinds and their config label.
var workingConfigs = map[podworkers.PodWorkerSync]string{
	{HasConfig: true, Static: true}:                "desired",
	{HasConfig: true, Static: false}:               "desired",
	{Orphan: true, HasConfig: true, Static: true}:  "orphan",
	{Orphan: true, HasConfig: true, Static: false}: "orphan",
	{Orphan: true, HasConfig: false}:               "runtime_only",
}

// recordWorkers counts the workers by state and kind; every valid
// combination is set, to zero when no worker has it.
func (m *podCounts) recordWorkers(workers map[types.UID]podworkers.PodWorkerSync) {
	counts := map[podworkers.PodWorkerSync]int{}
	for _, w := range workers {
		counts[w]++
	}
	for kind, config := range workingConfigs {
		static := staticLabel(kind.Static)
		if !kind.HasConfig {
			static = "unknown"
		}
		for _, state := range []podworkers.PodWorkerState{podworkers.SyncPod, podworkers.TerminatingPod, podworkers.TerminatedPod} {
			kind.State = state
			m.working.WithLabelValues(state.String(), config, static).Set(float64(counts[kind]))
		}
	}
}

func staticLabel(static bool) string {
	if static {
		return "true"
	}
	return ""
}
