package resize

import (
	"context"
	"encoding/json"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/cluster/events"
)

// Name names the Manager as a releaser of terminated pods.
func (m *Manager) Name() string { return "resize" }

// Release forgets a terminated pod.
func (m *Manager) Release(_ context.Context, pod *v1.Pod) error {
	m.Forget(pod.UID)
	return nil
}

// Actuated is what the runtime last gave a running container, and whether
// it is known.
func (m *Manager) Actuated(uid types.UID, name string) (v1.ResourceRequirements, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.pods[uid]
	if !ok {
		return v1.ResourceRequirements{}, false
	}
	r, ok := st.actuated[name]
	return r, ok
}

// SetActuated records what a container was started or updated with. Once
// every container is actuated at its allocation the resize is complete
// (its error, if any, is cleared).
func (m *Manager) SetActuated(uid types.UID, name string, r v1.ResourceRequirements) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if st, ok := m.pods[uid]; ok {
		st.actuated[name] = *r.DeepCopy()
	}
}

// SetError records why actuating the resize failed: the PodResizeInProgress
// condition says so (reason Error) until a later attempt succeeds.
func (m *Manager) SetError(uid types.UID, generation int64, message string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.pods[uid]
	if !ok {
		return
	}
	now := metav1.NewTime(m.now())
	c := &v1.PodCondition{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue, ObservedGeneration: generation,
		LastProbeTime: now, LastTransitionTime: now, Reason: ReasonError, Message: message}
	if old := st.inProgress; old != nil {
		c.ObservedGeneration = old.ObservedGeneration
		if old.Reason == ReasonError {
			c.LastTransitionTime = old.LastTransitionTime
		}
	}
	st.inProgress = c
}

// ClearError forgets the last actuation error once an attempt succeeded.
func (m *Manager) ClearError(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if st, ok := m.pods[uid]; ok && st.inProgress != nil && st.inProgress.Reason == ReasonError {
		c := *st.inProgress
		c.Reason, c.Message = "", ""
		c.LastTransitionTime = metav1.NewTime(m.now())
		st.inProgress = &c
	}
}

// Conditions are the pod's resize conditions, as upstream's status
// manager reports them: PodResizePending while a resize is Infeasible or
// Deferred; PodResizeInProgress while a running resizable container's
// actuated cpu or memory differs from its allocation (running says which
// containers run). A resize found complete is forgotten, with the
// kubelet's ResizeCompleted event.
func (m *Manager) Conditions(pod *v1.Pod, running func(name string) bool) []v1.PodCondition {
	m.mu.Lock()
	defer m.mu.Unlock()
	st, ok := m.pods[pod.UID]
	if !ok {
		return nil
	}
	var out []v1.PodCondition
	if st.pending != nil {
		out = append(out, *st.pending)
	}
	inProgress := false
	visit(pod, func(c *v1.Container) {
		alloc, known := st.allocated[c.Name]
		if !known || !running(c.Name) {
			return
		}
		// Unknown after a restart of the core: the runtime manager updates
		// it in place, idempotently; that is a resize in progress only if
		// one was accepted since.
		act, ok := st.actuated[c.Name]
		if ok && len(ChangedResources(alloc, act)) != 0 || !ok && st.inProgress != nil {
			inProgress = true
		}
	})
	switch {
	case inProgress && st.inProgress == nil:
		now := metav1.NewTime(m.now())
		st.inProgress = &v1.PodCondition{Type: v1.PodResizeInProgress, Status: v1.ConditionTrue, ObservedGeneration: pod.Generation,
			LastProbeTime: now, LastTransitionTime: now}
	case !inProgress && st.inProgress != nil:
		st.inProgress = nil
		m.events.Event(pod, v1.EventTypeNormal, events.ResizeCompleted, completionMessage(pod))
	}
	if st.inProgress != nil {
		out = append(out, *st.inProgress)
	}
	return out
}

// completionMessage is upstream's podResizeCompletionMsg: every
// container's allocated resources as JSON.
func completionMessage(pod *v1.Pod) string {
	type allocation struct {
		Name      string                  `json:"name"`
		Resources v1.ResourceRequirements `json:"resources,omitempty"`
	}
	var summary struct {
		InitContainers []allocation `json:"initContainers,omitempty"`
		Containers     []allocation `json:"containers,omitempty"`
	}
	for _, c := range pod.Spec.InitContainers {
		summary.InitContainers = append(summary.InitContainers, allocation{c.Name, c.Resources})
	}
	for _, c := range pod.Spec.Containers {
		summary.Containers = append(summary.Containers, allocation{c.Name, c.Resources})
	}
	b, err := json.Marshal(summary)
	if err != nil {
		return "Pod resize completed"
	}
	return "Pod resize completed: " + string(b)
}

// ChangedResources are what a resize changes, cpu and memory, when their
// request or limit differs between want and have.
func ChangedResources(want, have v1.ResourceRequirements) []v1.ResourceName {
	var out []v1.ResourceName
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
		if !want.Requests[name].Equal(have.Requests[name]) || !want.Limits[name].Equal(have.Limits[name]) {
			out = append(out, name)
		}
	}
	return out
}

// ContainerResources are a container's resources in its status: cpu and
// memory as actuated while it runs (else as allocated), the rest as
// allocated; and its allocatedResources (the allocated requests).
func (m *Manager) ContainerResources(pod *v1.Pod, c *v1.Container, running bool) (*v1.ResourceRequirements, v1.ResourceList) {
	m.mu.Lock()
	defer m.mu.Unlock()
	alloc := c.Resources
	var act *v1.ResourceRequirements
	if st, ok := m.pods[pod.UID]; ok {
		if r, ok := st.allocated[c.Name]; ok {
			alloc = r
		}
		if r, ok := st.actuated[c.Name]; ok && running {
			act = &r
		}
	}
	out := alloc.DeepCopy()
	if act != nil {
		for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory} {
			setOrDelete(&out.Requests, name, act.Requests)
			setOrDelete(&out.Limits, name, act.Limits)
		}
	}
	return out, alloc.Requests.DeepCopy()
}

func setOrDelete(list *v1.ResourceList, name v1.ResourceName, from v1.ResourceList) {
	q, ok := from[name]
	switch {
	case ok && *list == nil:
		*list = v1.ResourceList{name: q.DeepCopy()}
	case ok:
		(*list)[name] = q.DeepCopy()
	default:
		delete(*list, name)
	}
}
