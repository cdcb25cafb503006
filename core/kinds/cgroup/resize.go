package cgroup

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/pods/podruntime"
	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
)

var _ podruntime.PodResizer = (*Manager)(nil)

// errNoFreshPlan: the plugin gave no plan for the resized pod; its last
// plan is for the old resources, and a resize waits rather than claim it.
var errNoFreshPlan = errors.New("the cgroup plugin gave no plan for the new resources")

// ResizePod plans a running pod at its new resources (its cgroup stays
// where it is: a resize never changes the QoS class) and widens the pod
// cgroup to the larger of the old and new settings, so that its containers
// can then be resized in any order, as upstream orders pod and container
// updates by direction; finish sets the new settings.
func (m *Manager) ResizePod(ctx context.Context, pod *v1.Pod) (*podruntime.ResourcePlan, func() error, error) {
	last := m.lastPlan(pod.UID)
	plan, err := m.PlanPod(ctx, pod)
	if err != nil {
		return nil, nil, err
	}
	done := func() error { return nil }
	if last == nil {
		return plan, done, nil // no cgroup plugin: nothing was planned
	}
	// PlanPod keeps the very plan it had when the plugin gave none; the
	// resources it returns are a copy under the CPU manager, so the plan
	// kept is what tells.
	now := m.lastPlan(pod.UID)
	if now == last {
		return nil, nil, errNoFreshPlan
	}
	if now == nil || now.cgroup == "" {
		return plan, done, nil
	}
	abs := m.absolute(now.cgroup)
	if err := m.tree.apply(abs, widest(last.settings, now.settings)); err != nil {
		return nil, nil, fmt.Errorf("widen the pod cgroup: %w", err)
	}
	return plan, func() error { return m.tree.apply(abs, now.settings) }, nil
}

// widest are settings that hold both a and b: the larger shares, quota
// and memory limit (-1, no limit, being the largest); the rest as b.
func widest(a, b *cgroupv1.CgroupSettings) *cgroupv1.CgroupSettings {
	out := proto.Clone(b).(*cgroupv1.CgroupSettings)
	if a == nil {
		return out
	}
	if a.CpuShares != nil && (out.CpuShares == nil || *a.CpuShares > *out.CpuShares) {
		out.CpuShares = a.CpuShares
	}
	out.CpuQuota = largestLimit(a.CpuQuota, out.CpuQuota)
	out.MemoryLimitBytes = largestLimit(a.MemoryLimitBytes, out.MemoryLimitBytes)
	return out
}

// largestLimit of two limits where -1 means none; unset takes the other.
func largestLimit(a, b *int64) *int64 {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	case *a == -1 || *b == -1:
		none := int64(-1)
		return &none
	case *a > *b:
		return a
	}
	return b
}
