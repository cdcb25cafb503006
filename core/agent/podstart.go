package agent

import (
	"context"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/pods/podspec"
	"github.com/microlet/microlet/core/pods/status"
)

// podStartBuckets are upstream's podStartupDurationBuckets.
var podStartBuckets = []float64{0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600}

// podStarts records kubelet_pod_start_duration_seconds: for each pod, once,
// the time from when a source first showed it to the node (its
// kubernetes.io/config.seen annotation) to when its status first shows
// every container running.
type podStarts struct {
	duration prometheus.Histogram
	// seen holds the pods recorded (or found already running), while they
	// have a status.
	seen map[types.UID]bool
}

func newPodStarts(reg prometheus.Registerer) *podStarts {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{
		Subsystem: "kubelet", Name: "pod_start_duration_seconds",
		Help:    "[ALPHA] Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run",
		Buckets: podStartBuckets,
	})
	reg.MustRegister(h)
	return &podStarts{duration: h, seen: map[types.UID]bool{}}
}

// observe looks at every pod's status; desired gives the pods' first-seen
// times.
func (p *podStarts) observe(statuses []status.VersionedPodStatus, desired []*v1.Pod, now time.Time) {
	firstSeen := make(map[types.UID]string, len(desired))
	for _, pod := range desired {
		firstSeen[pod.UID] = pod.Annotations[podspec.ConfigFirstSeenAnnotationKey]
	}
	current := make(map[types.UID]bool, len(statuses))
	for _, st := range statuses {
		current[st.UID] = true
		if p.seen[st.UID] || !allRunning(&st.Status) {
			continue
		}
		p.seen[st.UID] = true
		if seen, err := time.Parse(time.RFC3339Nano, firstSeen[st.UID]); err == nil {
			p.duration.Observe(now.Sub(seen).Seconds())
		}
	}
	for uid := range p.seen {
		if !current[uid] {
			delete(p.seen, uid)
		}
	}
}

// allRunning: the pod runs, and so does each of its containers.
func allRunning(s *v1.PodStatus) bool {
	if s.Phase != v1.PodRunning || len(s.ContainerStatuses) == 0 {
		return false
	}
	for _, c := range s.ContainerStatuses {
		if c.State.Running == nil {
			return false
		}
	}
	return true
}

// trackPodStarts watches the status manager until ctx ends.
func trackPodStarts(ctx context.Context, statuses *status.Manager, loop interface{ DesiredPods() []*v1.Pod }, reg prometheus.Registerer) {
	starts := newPodStarts(reg)
	for {
		all, changed := statuses.Statuses()
		starts.observe(all, loop.DesiredPods(), time.Now())
		select {
		case <-ctx.Done():
			return
		case <-changed:
		}
	}
}
