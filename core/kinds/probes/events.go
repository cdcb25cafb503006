package probes

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/cluster/events"
	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
)

// containerRef is the reference of container name of pod for the prober's
// events; nil when none can be made, and then none are recorded.
func containerRef(pod *v1.Pod, name string) *v1.ObjectReference {
	ref, err := events.ContainerRef(pod, name)
	if err != nil {
		return nil
	}
	return ref
}

// recordAttempt records upstream's prober event for an attempt the plugin
// reports failed ("Liveness probe failed: <output>"), errored, or
// succeeded with a warning, on every such attempt as upstream's prober
// does: the recorder's correlation counts the repeats.
func (m *Manager) recordAttempt(e *containerEntry, t ProbeType, r *probesv1.ProbeResult) {
	if e.ref == nil {
		return
	}
	switch r.GetAttempt() {
	case probesv1.Result_RESULT_FAILURE:
		m.events.Event(e.ref, v1.EventTypeWarning, events.ContainerUnhealthy, fmt.Sprintf("%s probe failed: %s", t, r.GetMessage()))
	case probesv1.Result_RESULT_UNKNOWN:
		m.events.Event(e.ref, v1.EventTypeWarning, events.ContainerUnhealthy, fmt.Sprintf("%s probe errored and resulted in unknown state: %s", t, r.GetMessage()))
	case probesv1.Result_RESULT_SUCCESS:
		if r.GetWarning() {
			m.events.Event(e.ref, v1.EventTypeWarning, events.ContainerProbeWarning, fmt.Sprintf("%s probe warning: %s", t, r.GetMessage()))
		}
	}
}
