package probes

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
)

// containerEntry is one running container instance the core knows of:
// what the plugin is asked to probe and the verdict of each probe.
type containerEntry struct {
	podUID       types.UID
	podName      string
	podNamespace string
	name         string
	ref          *v1.ObjectReference // the container's, for its events

	// probes is what the plugin probes, as the pod spec says (without
	// liveness and startup once the pod is being deleted); nil when the
	// plugin has nothing to probe.
	probes *probesv1.ContainerProbes
	// terminating: the pod is being deleted, so liveness and startup
	// stand at success and no longer run (upstream's quiet shutdown).
	terminating bool
	// verdicts by ProbeType; nil for a probe the container does not have.
	verdicts [len(probeTypes)]*verdict
}

type verdict struct {
	result Result
	// grace is the probe-level terminationGracePeriodSeconds that came
	// with a liveness or startup failure.
	grace *int64
}

// wire is what the plugin is to probe now: a startup probe that has
// succeeded is left out, so that a new plugin process does not hold
// liveness and readiness back again. Nil: nothing to probe.
func (e *containerEntry) wire() *probesv1.ContainerProbes {
	if e.probes == nil {
		return nil
	}
	if v := e.verdicts[Startup]; v == nil || v.result != Success || e.probes.GetStartup() == nil {
		return e.probes
	}
	c := proto.CloneOf(e.probes)
	c.Startup = nil
	if c.Liveness == nil && c.Readiness == nil {
		return nil
	}
	return c
}

// update takes the newly desired state of the same container instance
// and says whether the plugin's probes of it changed. Verdicts of probes
// it keeps stay.
func (e *containerEntry) update(desired *containerEntry) bool {
	for _, t := range probeTypes {
		switch {
		case desired.verdicts[t] == nil:
			e.verdicts[t] = nil
		case e.verdicts[t] == nil || (desired.terminating && t != Readiness):
			e.verdicts[t] = desired.verdicts[t]
		}
	}
	e.terminating = desired.terminating
	if proto.Equal(e.probes, desired.probes) {
		return false
	}
	e.probes = desired.probes
	return true
}

func (e *containerEntry) started() bool {
	v := e.verdicts[Startup]
	return v == nil || v.result == Success
}

// ShouldRestart says whether the container instance failed its liveness or
// startup probe and must be killed (and restarted per its policy), with
// upstream's message and the probe-level grace period if any. It
// implements podruntime.ProbeResults.
func (m *Manager) ShouldRestart(containerID string) (bool, string, *int64) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	e := m.containers[containerID]
	if e == nil {
		return false, "", nil
	}
	for _, t := range [...]ProbeType{Liveness, Startup} {
		if v := e.verdicts[t]; v != nil && v.result == Failure {
			return true, fmt.Sprintf("Container %s failed %s probe", e.name, probeNames[t]), v.grace
		}
	}
	return false, "", nil
}

// probeNames are the probe types as upstream's messages name them.
var probeNames = [len(probeTypes)]string{Liveness: "liveness", Readiness: "readiness", Startup: "startup"}

// Started says whether the container instance has started: its startup
// probe succeeded, or it has none. An instance UpdatePod has not seen
// running counts as having none. It implements podruntime.ProbeResults.
func (m *Manager) Started(containerID string) bool {
	m.mu.RLock()
	defer m.mu.RUnlock()
	e := m.containers[containerID]
	return e == nil || e.started()
}

// Ready says whether the container instance is ready, as upstream's
// UpdatePodStatus decides for a running container: it has started and its
// readiness probe succeeded, or it has none. known is false for an
// instance UpdatePod has not seen running (not running, or started since);
// the status generator then decides as upstream does for probes that have
// not run yet: not ready unless running with neither a readiness nor a
// startup probe.
func (m *Manager) Ready(containerID string) (ready, known bool) {
	m.mu.RLock()
	defer m.mu.RUnlock()
	e := m.containers[containerID]
	if e == nil {
		return false, false
	}
	v := e.verdicts[Readiness]
	return e.started() && (v == nil || v.result == Success), true
}

// Updates delivers a change of verdict whenever the plugin reports one.
// Changes UpdatePod makes itself (a new container's initial verdicts, the
// quiet shutdown of a deleted pod) are not sent: the caller knows of them.
// The channel is read by one consumer, the sync loop; while it is full,
// reading the plugin's results waits, as upstream's workers wait.
func (m *Manager) Updates() <-chan Update { return m.updates }

// apply takes one result from the plugin.
func (m *Manager) apply(ctx context.Context, r *probesv1.ProbeResult) {
	t, ok := probeTypeOf(r.GetProbeType())
	if !ok {
		m.logger.Warn("ignoring a probe result of no known probe type", "probe_type", r.GetProbeType(), "container_id", r.GetContainerId())
		return
	}
	m.mu.Lock()
	e := m.containers[r.GetContainerId()]
	if e == nil || e.verdicts[t] == nil {
		// A container the core no longer probes (or never asked about).
		m.mu.Unlock()
		return
	}
	var update *Update
	result, settled := resultOf(r.GetResult())
	if settled && !(e.terminating && t != Readiness) {
		v := e.verdicts[t]
		v.grace = nil
		if result == Failure && t != Readiness && r.TerminationGracePeriodSeconds != nil {
			grace := r.GetTerminationGracePeriodSeconds()
			v.grace = &grace
		}
		if v.result != result {
			v.result = result
			update = &Update{PodUID: e.podUID, ContainerID: r.GetContainerId(), Type: t, Result: result}
		}
	}
	m.metrics.observe(t, e, r.GetAttempt(), r.GetDuration().AsDuration())
	m.mu.Unlock()

	if r.GetAttempt() == probesv1.Result_RESULT_FAILURE || r.GetAttempt() == probesv1.Result_RESULT_UNKNOWN {
		m.logger.Debug("probe attempt did not succeed", "probe", t, "attempt", r.GetAttempt(), "pod", e.podNamespace+"/"+e.podName,
			"container", e.name, "container_id", r.GetContainerId(), "output", r.GetMessage())
	}
	m.recordAttempt(e, t, r)
	if update == nil {
		return
	}
	m.logger.Debug("probe verdict changed", "probe", t, "result", update.Result, "pod", e.podNamespace+"/"+e.podName, "container", e.name)
	select {
	case m.updates <- *update:
	case <-ctx.Done():
	}
}
