package devices

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/microlet/microlet/core/pluginhost"
	"github.com/microlet/microlet/core/pods/syncloop"
)

// ReasonUnexpectedAdmissionError is upstream's reason for a pod the device
// manager refuses (pkg/kubelet/cm/admission).
const ReasonUnexpectedAdmissionError = "UnexpectedAdmissionError"

// waitError means the pod cannot be decided now: a plugin it needs does
// not serve. The pod waits and is admitted again later.
type waitError struct{ message string }

func (e *waitError) Error() string { return e.message }

func waitFor(format string, args ...any) error {
	return &waitError{message: fmt.Sprintf(format, args...)}
}

// containerRequest is what one container asks of the devices plugins:
// count devices of each resource.
type containerRequest struct {
	container *v1.Container
	// init and restartable say how the container's devices may be reused
	// by the containers after it (upstream devicesToReuse).
	init, restartable bool
	counts            map[string]int
}

// requestsOf are the extended resources each container asks for, init
// containers first, as the kubelet allocates them. Extended resources
// cannot be overcommitted (requests equal limits), so limits say it all,
// as upstream reads them.
func requestsOf(pod *v1.Pod) []containerRequest {
	var out []containerRequest
	add := func(c *v1.Container, init bool) {
		counts := map[string]int{}
		for name, q := range c.Resources.Limits {
			if n := q.Value(); n > 0 && isExtendedResource(string(name)) {
				counts[string(name)] = int(n)
			}
		}
		if len(counts) > 0 {
			restartable := c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
			out = append(out, containerRequest{container: c, init: init, restartable: restartable, counts: counts})
		}
	}
	for i := range pod.Spec.InitContainers {
		add(&pod.Spec.InitContainers[i], true)
	}
	for i := range pod.Spec.Containers {
		add(&pod.Spec.Containers[i], false)
	}
	return out
}

// Admit allocates the devices every container of pod asks for, calling
// each plugin's GetPreferredAllocation (when the resource offers it) and
// Allocate, and records the allocations; a pod already holding its devices
// (after a restart of the core) keeps them. It refuses a pod asking for
// more healthy devices than are free, or for an extended resource no
// devices plugin serves, as upstream does (UnexpectedAdmissionError); a
// pod whose plugin does not serve waits (Retry).
func (m *Manager) Admit(ctx context.Context, pod *v1.Pod, _ []*v1.Pod) syncloop.Admission {
	requests := requestsOf(pod)
	if len(requests) == 0 {
		return syncloop.Admission{Admit: true}
	}
	m.admitMu.Lock()
	defer m.admitMu.Unlock()
	a := &podAdmission{m: m, pod: pod, reusable: map[string]sets.Set[string]{}}
	err := a.admit(ctx, requests)
	if err == nil {
		err = a.commit()
	}
	var wait *waitError
	switch {
	case err == nil:
		return syncloop.Admission{Admit: true}
	case errors.As(err, &wait):
		a.rollback()
		return syncloop.Admission{Retry: true, Message: wait.message}
	default:
		a.rollback()
		return syncloop.Admission{Reason: ReasonUnexpectedAdmissionError, Message: fmt.Sprintf("Allocate failed due to %v, which is unexpected", err)}
	}
}

// podAdmission is one pod's admission in progress.
type podAdmission struct {
	m   *Manager
	pod *v1.Pod
	// reusable are devices of the pod's init containers that later
	// containers may take, by resource.
	reusable map[string]sets.Set[string]
	// added are the allocations this admission made, as container and
	// resource, undone if it fails.
	added [][2]string
}

func (a *podAdmission) admit(ctx context.Context, requests []containerRequest) error {
	for _, req := range requests {
		for _, resource := range sortedKeys(req.counts) {
			if err := a.allocateContainer(ctx, req.container.Name, resource, req.counts[resource]); err != nil {
				return err
			}
		}
		a.m.mu.Lock()
		held := a.m.allocations.containerDevices(a.pod.UID, req.container.Name)
		a.m.mu.Unlock()
		// As upstream: the devices of an init container that ends are free
		// for the containers after it; a sidecar's and an app container's
		// are not.
		for resource, ids := range held {
			if a.reusable[resource] == nil {
				a.reusable[resource] = sets.New[string]()
			}
			if req.init && !req.restartable {
				a.reusable[resource].Insert(ids...)
			} else {
				a.reusable[resource].Delete(ids...)
			}
		}
	}
	return nil
}

// allocateContainer gives one container count devices of resource, unless
// it holds them already (upstream devicesToAllocate and
// allocateContainerResources).
func (a *podAdmission) allocateContainer(ctx context.Context, container, resource string, count int) error {
	m := a.m
	m.mu.Lock()
	plan, err := a.planLocked(container, resource, count)
	m.mu.Unlock()
	if err != nil || plan == nil {
		return err
	}
	var affinity []int64
	if m.opts.Affinity != nil {
		affinity = m.opts.Affinity(a.pod.UID, container)
	}
	// As upstream's devicesToAllocate: the devices on the topology
	// manager's nodes first. When they are more than enough, the plugin
	// chooses among them; otherwise all of them are taken, the plugin
	// chooses the rest among every free device, and what it leaves is
	// taken from other nodes, then from devices without a node.
	aligned, unaligned, none := plan.byAffinity(affinity)
	prefer := func(among []string) error {
		if plan.needed() == 0 || !plan.preferredAllocation {
			return nil
		}
		// The plugin chooses among the devices offered and those picked
		// already, which it must include.
		offer := append(slices.Clone(among), plan.picked...)
		slices.Sort(offer)
		offer = slices.Compact(offer)
		preferred, err := m.preferred(ctx, plan.owner, resource, offer, plan.picked, count)
		switch {
		case errors.Is(err, pluginhost.ErrUnavailable):
			return waitFor("device plugin %s, which serves %s, is unavailable: %v", pluginName(plan.owner), resource, err)
		case err != nil:
			return fmt.Errorf("device plugin GetPreferredAllocation rpc failed with err: %v", err)
		}
		plan.take(availableOf(among, preferred))
		return nil
	}
	if plan.needed() < len(aligned) {
		if err := prefer(aligned); err != nil {
			return err
		}
		plan.take(aligned)
	} else {
		plan.take(aligned)
		if err := prefer(plan.available); err != nil {
			return err
		}
		plan.take(unaligned)
		plan.take(none)
	}

	resp, err := m.allocate(ctx, plan.owner, resource, string(a.pod.UID), plan.picked)
	switch {
	case errors.Is(err, pluginhost.ErrUnavailable):
		return waitFor("device plugin %s, which serves %s, is unavailable: %v", pluginName(plan.owner), resource, err)
	case err != nil:
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.warnSharedPaths(a.pod.Namespace+"/"+a.pod.Name, container, resource, resp)
	m.allocations.set(a.pod.UID, container, resource, &allocation{
		owner: plan.owner, preStartRequired: plan.preStartRequired, devices: plan.perNUMA(), response: resp,
	})
	a.added = append(a.added, [2]string{container, resource})
	return nil
}

// planLocked checks that count devices of resource can be allocated to the
// container and picks its reusable ones; nil when the container holds its
// devices already. Called with m.mu held.
func (a *podAdmission) planLocked(container, resource string, count int) (*devicePlan, error) {
	m := a.m
	if held := m.allocations.get(a.pod.UID, container, resource); held != nil {
		// A pod's requests do not change once admitted; fail loudly if
		// they did, as upstream.
		if n := len(held.devices.ids()); n != count {
			return nil, fmt.Errorf("pod %q container %q changed request for resource %q from %d to %d", a.pod.UID, container, resource, n, count)
		}
		return nil, nil
	}
	r := m.resources[resource]
	if r == nil {
		return nil, m.unknownResourceLocked(resource)
	}
	if err := m.ownerServesLocked(r, resource); err != nil {
		return nil, err
	}
	p := &devicePlan{owner: r.owner, preStartRequired: r.preStartRequired, preferredAllocation: r.preferredAllocation,
		count: count, numa: map[string][]int64{}}
	for id, d := range r.devices {
		p.numa[id] = d.GetNumaNodes()
	}
	p.take(sets.List(a.reusable[resource]))
	inUse := m.allocations.inUse(resource)
	for _, id := range r.healthy() {
		if !inUse.Has(id) && !slices.Contains(p.picked, id) {
			p.available = append(p.available, id)
		}
	}
	if len(p.available) < p.needed() {
		return nil, fmt.Errorf("requested number of devices unavailable for %s. Requested: %d, Available: %d", resource, p.needed(), len(p.available))
	}
	return p, nil
}

// devicePlan is the devices being picked for one container and resource.
type devicePlan struct {
	owner                                 string
	preStartRequired, preferredAllocation bool
	count                                 int
	picked                                []string
	// available are the free healthy devices not picked, sorted.
	available []string
	// numa are the NUMA nodes of every device of the resource.
	numa map[string][]int64
}

func (p *devicePlan) needed() int { return p.count - len(p.picked) }

// take picks devices of ids, in order, until count are picked.
func (p *devicePlan) take(ids []string) {
	for _, id := range ids {
		if p.needed() == 0 {
			return
		}
		if !slices.Contains(p.picked, id) {
			p.picked = append(p.picked, id)
		}
	}
}

// availableOf are the devices of ids that are among available, in ids'
// order.
func availableOf(available, ids []string) []string {
	var out []string
	for _, id := range ids {
		if slices.Contains(available, id) {
			out = append(out, id)
		}
	}
	return out
}

// byAffinity sorts the available devices as upstream's filterByAffinity:
// those on one of the affinity's NUMA nodes, those on other nodes, and
// those on none. Without an affinity, or for a resource none of whose
// devices reports a NUMA node, every one is in the last group.
func (p *devicePlan) byAffinity(affinity []int64) (aligned, unaligned, none []string) {
	topology := false
	for _, nodes := range p.numa {
		topology = topology || len(nodes) > 0
	}
	for _, id := range p.available {
		nodes := p.numa[id]
		switch {
		case len(affinity) == 0 || !topology || len(nodes) == 0:
			none = append(none, id)
		case slices.ContainsFunc(nodes, func(n int64) bool { return slices.Contains(affinity, n) }):
			aligned = append(aligned, id)
		default:
			unaligned = append(unaligned, id)
		}
	}
	return aligned, unaligned, none
}

// perNUMA files the picked devices by NUMA node, as the checkpoint keeps
// them.
func (p *devicePlan) perNUMA() devicesPerNUMA {
	out := devicesPerNUMA{}
	for _, id := range p.picked {
		nodes := p.numa[id]
		if len(nodes) == 0 {
			nodes = []int64{noNUMANode}
		}
		for _, n := range nodes {
			out[n] = append(out[n], id)
		}
	}
	return out
}

// ownerServesLocked says why the resource's plugin cannot allocate now:
// gone for good (the pod is refused, as upstream refuses a resource whose
// devices are all unhealthy), or down, or not offering the resource again
// yet after a restart (the pod waits).
func (m *Manager) ownerServesLocked(r *deviceResource, resource string) error {
	if !m.configured(r.owner) {
		return fmt.Errorf("no healthy devices present; cannot allocate unhealthy devices %s", resource)
	}
	if st := m.plugins[r.owner]; st == nil || !st.serving {
		reason := "it has not reported its resources since the core started"
		if st != nil && st.lastErr != nil {
			reason = st.lastErr.Error()
		}
		return waitFor("device plugin %s, which serves %s, is unavailable (%s); pods asking for %s wait until it serves", pluginName(r.owner), resource, reason, resource)
	}
	if r.stopped() {
		return waitFor("device plugin %s has not offered %s again since it lost it; pods asking for %s wait until it does, for at most %v",
			pluginName(r.owner), resource, resource, m.grace)
	}
	if len(r.healthy()) == 0 {
		return fmt.Errorf("no healthy devices present; cannot allocate unhealthy devices %s", resource)
	}
	return nil
}

// unknownResourceLocked is why no plugin can allocate resource: it is
// refused as upstream refuses an unregistered resource, unless a
// configured plugin has not reported yet and may serve it. Called with
// m.mu held.
func (m *Manager) unknownResourceLocked(resource string) error {
	var silent []string
	for _, s := range m.opts.Plugins() {
		if st := m.plugins[s.Name()]; st == nil || !st.reported {
			silent = append(silent, pluginName(s.Name()))
		}
	}
	if len(silent) > 0 {
		slices.Sort(silent)
		return waitFor("no device plugin has offered %s yet; waiting for %s to report their resources", resource, strings.Join(silent, ", "))
	}
	return fmt.Errorf("cannot allocate unregistered device %s", resource)
}

// commit checkpoints the allocations the admission made.
func (a *podAdmission) commit() error {
	a.m.mu.Lock()
	a.m.restored.Delete(a.pod.UID)
	a.m.mu.Unlock()
	if len(a.added) == 0 {
		return nil
	}
	return a.m.writeCheckpoint()
}

// rollback frees what the admission allocated.
func (a *podAdmission) rollback() {
	a.m.mu.Lock()
	for _, added := range a.added {
		a.m.allocations.remove(a.pod.UID, added[0], added[1])
	}
	a.m.mu.Unlock()
	a.added = nil
}
