package podruntime

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/runtime/container"
)

// killReason says why a container is killed; it picks the grace period.
type killReason string

const (
	killReasonProbe             killReason = "Probe"
	killReasonFailedPostStart   killReason = "FailedPostStartHook"
	killReasonUnknownState      killReason = "Unknown"
	killReasonDefinitionChanged killReason = "DefinitionChanged"
	killReasonNotInSpec         killReason = "NotInSpec"
	killReasonResize            killReason = "ResizeRestart"
)

// containerToKill is a running container instance that must be stopped.
type containerToKill struct {
	ID   string
	Name string
	// Spec is the container's spec in the pod; nil for a container the
	// spec does not name.
	Spec    *v1.Container
	Message string
	Reason  killReason
	// GracePeriod is the probe-level terminationGracePeriodSeconds of a
	// probe kill; nil: the pod's.
	GracePeriod *int64
}

// podActions is what SyncPod must do to make the runtime match the pod.
type podActions struct {
	// KillPod stops every running container and the sandboxes.
	KillPod bool
	// CreateSandbox makes a new sandbox (after KillPod, when both are set).
	CreateSandbox bool
	// SandboxID is the sandbox containers are started in when no new one
	// is made; Attempt the sandbox attempt number.
	SandboxID string
	Attempt   uint32
	// InitContainersToStart and ContainersToStart are indexes into the
	// spec's InitContainers and Containers, in the order to start them.
	InitContainersToStart []int
	ContainersToStart     []int
	// EphemeralContainersToStart are indexes into the spec's
	// EphemeralContainers: those never started (they never restart).
	EphemeralContainersToStart []int
	// ContainersToKill are stopped first (when KillPod is not set).
	ContainersToKill []containerToKill
}

// killContainer adds a container instance to kill, once.
func (a *podActions) killContainer(k containerToKill) {
	for _, existing := range a.ContainersToKill {
		if existing.ID == k.ID {
			return
		}
	}
	a.ContainersToKill = append(a.ContainersToKill, k)
}

// noProbes is the ProbeResults of a pod nobody probes.
type noProbes struct{}

func (noProbes) ShouldRestart(string) (bool, string, *int64) { return false, "", nil }
func (noProbes) Started(string) bool                         { return true }

// sandboxChanged is upstream's PodSandboxChanged: whether the pod needs a
// new sandbox, the attempt number of the sandbox to use or make, and the ID
// of the newest sandbox when it can be reused or must be killed.
func sandboxChanged(pod *v1.Pod, status *container.PodStatus) (bool, uint32, string) {
	if len(status.Sandboxes) == 0 {
		return true, 0, ""
	}
	ready := 0
	for _, s := range status.Sandboxes {
		if s.State == container.SandboxReady {
			ready++
		}
	}
	newest := status.Sandboxes[0]
	switch {
	case ready > 1, newest.State != container.SandboxReady:
		return true, newest.Attempt + 1, newest.ID
	case newest.HostNetwork != pod.Spec.HostNetwork:
		// A sandbox in the wrong network namespace cannot be fixed; the new
		// one gets containers, the old one is killed with the pod.
		return true, newest.Attempt + 1, ""
	case !pod.Spec.HostNetwork && len(newest.IPs) == 0:
		return true, newest.Attempt + 1, newest.ID
	}
	return false, newest.Attempt, newest.ID
}

// computePodActions decides what SyncPod does, as upstream's function of the
// same name (in-place resize is computeResizeActions').
func computePodActions(pod *v1.Pod, status *container.PodStatus, probes ProbeResults) podActions {
	if probes == nil {
		probes = noProbes{}
	}
	create, attempt, sandboxID := sandboxChanged(pod, status)
	actions := podActions{KillPod: create, CreateSandbox: create, SandboxID: sandboxID, Attempt: attempt}

	if create {
		// A pod that must not restart and whose containers ran keeps its
		// dead sandbox: a new one would only be killed again.
		if !shouldRestartOnFailure(pod) && attempt != 0 && len(status.Containers) != 0 {
			actions.CreateSandbox = false
			return actions
		}
		var toStart []int
		for i := range pod.Spec.Containers {
			c := &pod.Spec.Containers[i]
			if pod.Spec.RestartPolicy == v1.RestartPolicyOnFailure && containerSucceeded(c, status) {
				continue
			}
			toStart = append(toStart, i)
		}
		// Nothing left to run and initialization happened once: done.
		if len(toStart) == 0 && hasAnyRegularContainerCreated(pod, status) {
			actions.CreateSandbox = false
			return actions
		}
		// A new sandbox starts from the beginning: the first init container.
		if len(pod.Spec.InitContainers) != 0 {
			actions.InitContainersToStart = []int{0}
			return actions
		}
		actions.ContainersToStart = toStart
		return actions
	}

	// A container the spec does not name (a source may keep a pod's UID
	// across edits) must not keep running.
	for _, s := range status.Containers {
		if s.State.MayRun() && containerSpec(pod, s.Name) == nil {
			actions.killContainer(containerToKill{ID: s.ID, Name: s.Name, Reason: killReasonNotInSpec,
				Message: fmt.Sprintf("Container %s is not in the pod's spec", s.Name)})
		}
	}

	// Ephemeral containers start even before the pod is initialized, so
	// that a pod stuck in an init container can be debugged; one that ran
	// once is never started again.
	for i := range pod.Spec.EphemeralContainers {
		if status.Container(pod.Spec.EphemeralContainers[i].Name) == nil {
			actions.EphemeralContainersToStart = append(actions.EphemeralContainersToStart, i)
		}
	}

	initialized := computeInitContainerActions(pod, status, probes, &actions)
	if actions.KillPod || !initialized {
		return actions
	}

	keep := 0
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		s := status.Container(c.Name)
		if s == nil || s.State != container.StateRunning {
			if shouldContainerBeRestarted(c, pod, status) {
				actions.ContainersToStart = append(actions.ContainersToStart, i)
				// An instance in an unknown state may still run: stop it so
				// that two never run at once.
				if s != nil && s.State == container.StateUnknown {
					actions.killContainer(containerToKill{ID: s.ID, Name: c.Name, Spec: c, Reason: killReasonUnknownState,
						Message: fmt.Sprintf("Container is in %q state, try killing it before restart", s.State)})
				}
			}
			continue
		}
		// Running: keep it unless its spec changed or a probe failed.
		restart := shouldRestartOnFailure(pod)
		kill := containerToKill{ID: s.ID, Name: c.Name, Spec: c}
		if containerChanged(c, s) {
			kill.Message = fmt.Sprintf("Container %s definition changed", c.Name)
			kill.Reason = killReasonDefinitionChanged
			// A changed spec replaces the container whatever the policy.
			restart = true
		} else if failed, message, grace := probes.ShouldRestart(s.ID); failed {
			kill.Message = probeKillMessage(c, message)
			kill.Reason = killReasonProbe
			kill.GracePeriod = grace
		} else {
			keep++
			continue
		}
		if restart {
			kill.Message += ", will be restarted"
			actions.ContainersToStart = append(actions.ContainersToStart, i)
		}
		actions.killContainer(kill)
	}

	if keep == 0 && len(actions.ContainersToStart) == 0 {
		// Every regular container is done: the pod is finished, and its
		// sidecars must not keep it alive.
		actions.KillPod = true
		actions.InitContainersToStart = nil
	}
	return actions
}

// probeKillMessage is what the kill of a container whose probe failed says.
func probeKillMessage(c *v1.Container, message string) string {
	if message != "" {
		return message
	}
	return fmt.Sprintf("Container %s failed a probe", c.Name)
}
