package cgroup

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
)

// timedTree records every change to the cgroup tree in the kubelet's
// kubelet_cgroup_manager_duration_seconds, by its operation types: create
// (a cgroup that did not exist), update (one that did) and destroy.
type timedTree struct {
	tree
	duration *prometheus.HistogramVec
}

func newTimedTree(t tree, reg prometheus.Registerer) (tree, error) {
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: "kubelet", Name: "cgroup_manager_duration_seconds",
		Help:    "Duration in seconds for cgroup manager operations. Broken down by method.",
		Buckets: prometheus.DefBuckets,
	}, []string{"operation_type"})
	if err := reg.Register(duration); err != nil {
		return nil, err
	}
	return timedTree{tree: t, duration: duration}, nil
}

func (t timedTree) apply(path string, s *cgroupv1.CgroupSettings) error {
	op := "update"
	if !t.exists(path) {
		op = "create"
	}
	defer t.observe(op, time.Now())
	return t.tree.apply(path, s)
}

func (t timedTree) remove(path string) error {
	defer t.observe("destroy", time.Now())
	return t.tree.remove(path)
}

func (t timedTree) observe(op string, start time.Time) {
	t.duration.WithLabelValues(op).Observe(time.Since(start).Seconds())
}
