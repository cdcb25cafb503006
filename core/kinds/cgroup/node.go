package cgroup

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/microlet/microlet/core/pluginhost"
	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// nodePlan is the last good node plan.
type nodePlan struct {
	allocatable *typesv1.ResourceList
}

// UpdatePods tells the manager which pods are active (admitted and not yet
// terminated) and plans and applies the node's cgroups for them: kubepods
// and the QoS tiers, whose cpu shares follow the pods' requests. The loop
// calls it when the set of pods changes; Run calls it at start and every
// ReapplyInterval. While the plugin does not serve, the node's cgroups and
// allocatable stay as last planned and the error wraps
// pluginhost.ErrUnavailable.
func (m *Manager) UpdatePods(ctx context.Context, pods []*v1.Pod) error {
	m.mu.Lock()
	m.pods = slices.Clone(pods)
	m.podsKnown = true
	m.mu.Unlock()
	return m.syncNode(ctx)
}

// syncNode plans the node with the plugin and applies the plan.
func (m *Manager) syncNode(ctx context.Context) error {
	m.nodeMu.Lock()
	defer m.nodeMu.Unlock()
	reserved := m.evictionReservation(ctx)
	m.mu.Lock()
	views := make([]*typesv1.Pod, 0, len(m.pods))
	for _, pod := range m.pods {
		views = append(views, podView(pod))
	}
	m.mu.Unlock()
	resp, err := pluginhost.Ask(ctx, m.opts.Plugin, "cgroup plugin PlanNode", func(ctx context.Context, p pluginhost.Conn[cgroupv1.CgroupServiceClient]) (*cgroupv1.PlanNodeResponse, error) {
		return p.Client.PlanNode(ctx, &cgroupv1.PlanNodeRequest{Node: m.nodeView(), Pods: views, EvictionReserved: reserved})
	})
	if notConfigured(err) {
		m.noPlugin()
		m.mu.Lock()
		m.node = nil
		m.mu.Unlock()
		return nil
	}
	if err != nil {
		return err
	}
	m.pluginAnswered()
	if err := checkNodePlan(resp); err != nil {
		return fmt.Errorf("the cgroup plugin's node plan is invalid: %w", err)
	}
	m.mu.Lock()
	m.node = &nodePlan{allocatable: resp.GetAllocatable()}
	// Parents first: the first is kubepods.
	if cgroups := resp.GetCgroups(); len(cgroups) > 0 {
		m.podsCgroup = m.absolute(cgroups[0].GetCgroup())
	}
	m.mu.Unlock()
	var errs []error
	for _, cg := range resp.GetCgroups() {
		// kubepods may refuse a memory limit below its usage: the next
		// attempt (ReapplyInterval) tries again, as upstream retries.
		if err := m.tree.apply(m.absolute(cg.GetCgroup()), cg.GetResources()); err != nil {
			errs = append(errs, err)
		}
	}
	m.recordEnforcement(errs)
	return errors.Join(errs...)
}

// checkNodePlan refuses node plans the manager cannot apply.
func checkNodePlan(resp *cgroupv1.PlanNodeResponse) error {
	if resp.GetAllocatable() == nil {
		return errors.New("it has no allocatable")
	}
	var errs []error
	for _, cg := range resp.GetCgroups() {
		if err := checkCgroupPath(cg.GetCgroup()); err != nil {
			errs = append(errs, fmt.Errorf("cgroup %w", err))
			continue
		}
		if err := checkSettings(cg.GetResources()); err != nil {
			errs = append(errs, fmt.Errorf("cgroup %s: %w", cg.GetCgroup(), err))
		}
	}
	return errors.Join(errs...)
}

// evictionReservation asks the eviction strategy what its hard thresholds
// hold back, keeping the last answer when it cannot say.
func (m *Manager) evictionReservation(ctx context.Context) *typesv1.ResourceList {
	if m.opts.EvictionReservation == nil {
		return nil
	}
	reserved, err := m.opts.EvictionReservation(ctx, m.opts.Capacity.ResourceList())
	m.mu.Lock()
	defer m.mu.Unlock()
	if err != nil {
		m.log.Debug("eviction reservation unknown; keeping the last one", "error", err)
		return m.evictionReserved
	}
	m.evictionReserved = reserved
	return reserved
}

// PodsCgroup is the absolute path of the cgroup every pod lives in (the
// kubelet's "pods" system container), as the cgroup plugin planned it; ""
// before its first plan.
func (m *Manager) PodsCgroup() string {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.podsCgroup
}

// Allocatable is what pods may request on the node, for node status and
// admission: the last node plan's, or, without a cgroup plugin, capacity
// less the eviction reservation.
func (m *Manager) Allocatable() v1.ResourceList {
	m.mu.Lock()
	node, reserved := m.node, m.evictionReserved
	m.mu.Unlock()
	if node != nil {
		return resourceList(node.allocatable)
	}
	out := m.opts.Capacity.Resources()
	for name, r := range resourceList(reserved) {
		if q, ok := out[name]; ok {
			q.Sub(r)
			if q.Sign() < 0 {
				q.Set(0)
			}
			out[name] = q
		}
	}
	return out
}

// resourceList turns a wire resource list into node status quantities in
// the kubelet's formats; the internal pid resource is left out.
func resourceList(list *typesv1.ResourceList) v1.ResourceList {
	if list == nil {
		return nil
	}
	out := v1.ResourceList{}
	if list.CpuMillis != nil {
		out[v1.ResourceCPU] = *resource.NewMilliQuantity(list.GetCpuMillis(), resource.DecimalSI)
	}
	if list.MemoryBytes != nil {
		out[v1.ResourceMemory] = *resource.NewQuantity(list.GetMemoryBytes(), resource.BinarySI)
	}
	if list.EphemeralStorageBytes != nil {
		out[v1.ResourceEphemeralStorage] = *resource.NewQuantity(list.GetEphemeralStorageBytes(), resource.BinarySI)
	}
	for name, v := range list.GetOther() {
		format := resource.DecimalSI
		if strings.HasPrefix(name, v1.ResourceHugePagesPrefix) {
			format = resource.BinarySI
		}
		out[v1.ResourceName(name)] = *resource.NewQuantity(v, format)
	}
	return out
}
