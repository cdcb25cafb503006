package pleg

import (
	"maps"

	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/runtime/container"
)

// podRecord is a pod as the last relist that refreshed it saw it (old) and
// as the current relist lists it (current).
type podRecord struct {
	old     *container.Pod
	current *container.Pod
}

type podRecords map[types.UID]*podRecord

// setCurrent records a new listing; pods missing from it get a nil current.
func (pr podRecords) setCurrent(pods []*container.Pod) {
	for _, r := range pr {
		r.current = nil
	}
	for _, pod := range pods {
		if r, ok := pr[pod.UID]; ok {
			r.current = pod
		} else {
			pr[pod.UID] = &podRecord{current: pod}
		}
	}
}

// update makes the current listing of a pod the one the next relist
// compares with, once its status is in the cache.
func (pr podRecords) update(uid types.UID) {
	r, ok := pr[uid]
	if !ok {
		return
	}
	if r.current == nil {
		delete(pr, uid)
		return
	}
	r.old, r.current = r.current, nil
}

// plegState is a container's or sandbox's state as PLEG compares them:
// the runtime's states plus "non-existent".
type plegState string

const (
	plegRunning     plegState = "running"
	plegExited      plegState = "exited"
	plegUnknown     plegState = "unknown"
	plegNonExistent plegState = "non-existent"
)

// containerState maps a container's state as upstream's convertState:
// created counts as unknown, since nothing acts on it.
func containerState(s container.State) plegState {
	switch s {
	case container.StateRunning:
		return plegRunning
	case container.StateExited:
		return plegExited
	default:
		return plegUnknown
	}
}

// sandboxState maps a sandbox's state as upstream, which tracks sandboxes
// as containers: ready is running, not ready is exited.
func sandboxState(s container.SandboxState) plegState {
	switch s {
	case container.SandboxReady:
		return plegRunning
	case container.SandboxNotReady:
		return plegExited
	default:
		return plegUnknown
	}
}

// states maps the IDs of a pod's containers and sandboxes to their states.
func states(pod *container.Pod) map[string]plegState {
	out := map[string]plegState{}
	if pod == nil {
		return out
	}
	for _, c := range pod.Containers {
		out[c.ID] = containerState(c.State)
	}
	for _, s := range pod.Sandboxes {
		out[s.ID] = sandboxState(s.State)
	}
	return out
}

// listedAs says whether a status shows exactly what a listing lists: the
// same containers and sandboxes, each in the same state as PLEG compares
// them, so that a relist comparing the two would find no event.
func listedAs(status *container.PodStatus, listed *container.Pod) bool {
	return maps.Equal(states(status.Pod()), states(listed))
}

// ids lists the IDs of the pods' containers and sandboxes once each, in
// listing order: the old pod's first.
func ids(pods ...*container.Pod) []string {
	seen := map[string]bool{}
	var out []string
	add := func(id string) {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	for _, pod := range pods {
		if pod == nil {
			continue
		}
		for _, c := range pod.Containers {
			add(c.ID)
		}
		for _, s := range pod.Sandboxes {
			add(s.ID)
		}
	}
	return out
}

// computeEvents compares a pod's two listings, container by container.
func computeEvents(uid types.UID, old, current *container.Pod) []*PodLifecycleEvent {
	oldStates, newStates := states(old), states(current)
	var events []*PodLifecycleEvent
	for _, id := range ids(old, current) {
		before, ok := oldStates[id]
		if !ok {
			before = plegNonExistent
		}
		after, ok := newStates[id]
		if !ok {
			after = plegNonExistent
		}
		events = append(events, transitionEvents(uid, id, before, after)...)
	}
	return events
}

// transitionEvents are upstream's generateEvents.
func transitionEvents(uid types.UID, id string, before, after plegState) []*PodLifecycleEvent {
	if before == after {
		return nil
	}
	event := func(t PodLifecycleEventType) *PodLifecycleEvent {
		return &PodLifecycleEvent{ID: uid, Type: t, Data: id}
	}
	switch after {
	case plegRunning:
		return []*PodLifecycleEvent{event(ContainerStarted)}
	case plegExited:
		return []*PodLifecycleEvent{event(ContainerDied)}
	case plegUnknown:
		return []*PodLifecycleEvent{event(ContainerChanged)}
	default: // gone
		if before == plegExited {
			// Its death was reported already.
			return []*PodLifecycleEvent{event(ContainerRemoved)}
		}
		return []*PodLifecycleEvent{event(ContainerDied), event(ContainerRemoved)}
	}
}
