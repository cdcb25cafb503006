// Package resize is in-place pod resize (KEP-1287) as the kubelet v1.34
// does it: which resources a pod is allocated, whether a resize the API
// asks for fits (else PodResizePending, Infeasible or Deferred, with
// upstream's messages), which resources the runtime was last given (the
// actuated ones), and the PodResizePending and PodResizeInProgress
// conditions and container resources the pod's status shows.
//
// The record is in memory: after a restart of the core a pod is allocated
// what its spec asks when it is admitted again, and its running containers
// count as actuated at that allocation (upstream keeps both in checkpoint
// files).
package resize

import (
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/resource"

	"github.com/microlet/microlet/core/cluster/events"
	"github.com/microlet/microlet/core/pods/status"
)

// Upstream's reasons of the resize conditions (k8s.io/api core/v1).
const (
	ReasonInfeasible = v1.PodReasonInfeasible
	ReasonDeferred   = v1.PodReasonDeferred
	ReasonError      = v1.PodReasonError
)

// podState is one pod's record.
type podState struct {
	// allocated and actuated are by container name, resizable ones only.
	allocated map[string]v1.ResourceRequirements
	actuated  map[string]v1.ResourceRequirements
	// pending is the PodResizePending condition, nil when none.
	pending *v1.PodCondition
	// inProgress is the PodResizeInProgress condition of the resize being
	// actuated, nil when none was accepted since the last completion.
	inProgress *v1.PodCondition
}

// Manager keeps every admitted pod's allocation.
type Manager struct {
	// StaticCPUPolicy reports whether the CPU manager's static policy is in
	// force (core/kinds/cgroup); nil: it never is.
	StaticCPUPolicy func() bool
	// StaticMemoryPolicy likewise for the memory manager's Static policy.
	StaticMemoryPolicy func() bool

	mu     sync.Mutex
	pods   map[types.UID]*podState
	now    func() time.Time
	events events.Recorder
}

// cpuManagerInfeasible is upstream's message for a cpu resize of a
// Guaranteed pod under the static CPU policy: its exclusive CPUs cannot be
// changed in place (the InPlacePodVerticalScalingExclusiveCPUs gate is off
// in v1.34).
const cpuManagerInfeasible = `Resize is infeasible for Guaranteed Pods alongside CPU Manager policy "static"`

// memoryManagerInfeasible is upstream's message for a memory resize of a
// Guaranteed pod under the Static memory policy: its pinned memory cannot
// be changed in place (InPlacePodVerticalScalingExclusiveMemory is off in
// v1.34).
const memoryManagerInfeasible = `Resize is infeasible for Guaranteed Pods alongside Memory Manager policy "Static"`

// New makes an empty Manager; recorder (nil: none) gets the kubelet's
// ResizeCompleted events.
func New(recorder events.Recorder) *Manager {
	return &Manager{pods: map[types.UID]*podState{}, now: time.Now, events: events.OrNop(recorder)}
}

// Resizable reports whether a container can be resized in place: regular
// containers and sidecars (upstream's IsResizableContainer).
func Resizable(c *v1.Container, isInit bool) bool {
	return !isInit || c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways
}

// visit calls f on every resizable container of the pod.
func visit(pod *v1.Pod, f func(c *v1.Container)) {
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; Resizable(c, true) {
			f(c)
		}
	}
	for i := range pod.Spec.Containers {
		f(&pod.Spec.Containers[i])
	}
}

// Admitted records a newly admitted pod's allocation: what its spec asks.
// A pod already known keeps its allocation.
func (m *Manager) Admitted(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.pods[pod.UID]; ok {
		return
	}
	st := &podState{allocated: map[string]v1.ResourceRequirements{}, actuated: map[string]v1.ResourceRequirements{}}
	visit(pod, func(c *v1.Container) { st.allocated[c.Name] = *c.Resources.DeepCopy() })
	m.pods[pod.UID] = st
}

// Forget drops a pod that is gone.
func (m *Manager) Forget(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pods, uid)
}

// Allocated is the pod as the node runs it: its resizable containers with
// their allocated resources (the pod itself when they match its spec).
func (m *Manager) Allocated(pod *v1.Pod) *v1.Pod {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.allocatedLocked(pod)
}

func (m *Manager) allocatedLocked(pod *v1.Pod) *v1.Pod {
	st, ok := m.pods[pod.UID]
	if !ok || !differs(pod, st.allocated) {
		return pod
	}
	out := pod.DeepCopy()
	visit(out, func(c *v1.Container) {
		if r, ok := st.allocated[c.Name]; ok {
			c.Resources = *r.DeepCopy()
		}
	})
	return out
}

func differs(pod *v1.Pod, allocated map[string]v1.ResourceRequirements) bool {
	diff := false
	visit(pod, func(c *v1.Container) {
		if r, ok := allocated[c.Name]; ok && !equalResources(c.Resources, r) {
			diff = true
		}
	})
	return diff
}

// equalResources compares requests and limits quantity by quantity.
func equalResources(a, b v1.ResourceRequirements) bool {
	return apiequality.Semantic.DeepEqual(a.Requests, b.Requests) && apiequality.Semantic.DeepEqual(a.Limits, b.Limits)
}

// Fits says whether the pod, with the resources it asks for, fits next to
// the others: the node's admitters' verdict (message when it does not).
type Fits func(resized *v1.Pod) (ok bool, message string)

// Resize decides on the resize the pod's spec asks for, if any, as
// upstream's handlePodResourcesResize: a static pod's is Infeasible, so is
// one asking for more cpu or memory than the node's allocatable; one that
// does not fit next to the other pods now is Deferred (retried with
// RetryPending); one that fits is allocated and in progress until every
// running container is actuated. It returns the pod as the node must run
// it.
func (m *Manager) Resize(pod *v1.Pod, allocatable v1.ResourceList, fits Fits) *v1.Pod {
	m.mu.Lock()
	st, ok := m.pods[pod.UID]
	if !ok || !differs(pod, st.allocated) {
		if ok {
			st.pending = nil
		}
		m.mu.Unlock()
		return pod
	}
	if status.IsStaticPod(pod) {
		m.setPending(st, pod, ReasonInfeasible, "In-place resize of static-pods is not supported")
		defer m.mu.Unlock()
		return m.allocatedLocked(pod)
	}
	guaranteed := status.GetPodQOS(pod) == v1.PodQOSGuaranteed
	if m.StaticCPUPolicy != nil && guaranteed && requestChanged(pod, st.allocated, v1.ResourceCPU) && m.StaticCPUPolicy() {
		m.setPending(st, pod, ReasonInfeasible, cpuManagerInfeasible)
		defer m.mu.Unlock()
		return m.allocatedLocked(pod)
	}
	if m.StaticMemoryPolicy != nil && guaranteed && requestChanged(pod, st.allocated, v1.ResourceMemory) && m.StaticMemoryPolicy() {
		m.setPending(st, pod, ReasonInfeasible, memoryManagerInfeasible)
		defer m.mu.Unlock()
		return m.allocatedLocked(pod)
	}
	if msg := exceedsAllocatable(pod, allocatable); msg != "" {
		m.setPending(st, pod, ReasonInfeasible, msg)
		defer m.mu.Unlock()
		return m.allocatedLocked(pod)
	}
	m.mu.Unlock()
	// The admitters may call back into the node's components: not under
	// the lock.
	ok, message := fits(pod)
	m.mu.Lock()
	defer m.mu.Unlock()
	if st != m.pods[pod.UID] {
		return pod // forgotten meanwhile
	}
	if !ok {
		m.setPending(st, pod, ReasonDeferred, message)
		return m.allocatedLocked(pod)
	}
	visit(pod, func(c *v1.Container) { st.allocated[c.Name] = *c.Resources.DeepCopy() })
	st.pending = nil
	now := metav1.NewTime(m.now())
	st.inProgress = &v1.PodCondition{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue, ObservedGeneration: pod.Generation,
		LastProbeTime: now, LastTransitionTime: now}
	return pod
}

// requestChanged reports whether a resizable container's request of name
// differs from its allocation (upstream's
// guaranteedPodResourceResizeRequired: requests equal limits there).
func requestChanged(pod *v1.Pod, allocated map[string]v1.ResourceRequirements, name v1.ResourceName) bool {
	changed := false
	visit(pod, func(c *v1.Container) {
		want, had := c.Resources.Requests[name], allocated[c.Name].Requests[name]
		if !want.Equal(had) {
			changed = true
		}
	})
	return changed
}

// setPending sets the PodResizePending condition; its transition time
// changes only with its reason, as upstream's updatedPodResizeCondition.
func (m *Manager) setPending(st *podState, pod *v1.Pod, reason, message string) {
	now := metav1.NewTime(m.now())
	transition := now
	if st.pending != nil && st.pending.Reason == reason {
		transition = st.pending.LastTransitionTime
	}
	st.pending = &v1.PodCondition{Type: v1.PodResizePending, Status: v1.ConditionTrue, ObservedGeneration: pod.Generation,
		LastProbeTime: now, LastTransitionTime: transition, Reason: reason, Message: message}
}

// exceedsAllocatable is upstream's capacity check of canResizePod: the
// message when the pod asks for more cpu or memory than the node has.
func exceedsAllocatable(pod *v1.Pod, allocatable v1.ResourceList) string {
	if allocatable == nil {
		return ""
	}
	reqs := resource.PodRequests(pod, resource.PodResourcesOptions{})
	cpu, mem := reqs.Cpu().MilliValue(), reqs.Memory().Value()
	cpuAvail, memAvail := allocatable.Cpu().MilliValue(), allocatable.Memory().Value()
	switch {
	case mem > memAvail:
		return fmt.Sprintf("Node didn't have enough capacity: memory, requested: %d, capacity: %d", mem, memAvail)
	case cpu > cpuAvail:
		return fmt.Sprintf("Node didn't have enough capacity: cpu, requested: %d, capacity: %d", cpu, cpuAvail)
	}
	return ""
}

// PendingDeferred are the UIDs of pods whose resize is Deferred, to be
// tried again when room may have been made.
func (m *Manager) PendingDeferred() []types.UID {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []types.UID
	for uid, st := range m.pods {
		if st.pending != nil && st.pending.Reason == ReasonDeferred {
			out = append(out, uid)
		}
	}
	return out
}
