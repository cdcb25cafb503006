package podruntime

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/runtime/container"
)

// computeInitContainerActions adds to actions what the init containers need
// and reports whether the pod is initialized, as upstream's function of the
// same name (the SidecarContainers variant, GA since 1.33):
//
//   - init containers run one after the other; each must exit 0 before the
//     next starts; a failed one is restarted, or fails the pod under
//     restartPolicy Never;
//   - a sidecar (restartPolicy Always) counts as done once it has started
//     (its startup probe passed), and is restarted whenever it exits, its
//     spec changes or its probes fail.
//
// It walks the init containers backwards, because finished ones may have
// been removed by garbage collection: the last one that has an instance
// tells how far initialization got.
func computeInitContainerActions(pod *v1.Pod, status *container.PodStatus, probes ProbeResults, actions *podActions) bool {
	inits := pod.Spec.InitContainers
	if len(inits) == 0 {
		return true
	}

	// A regular container that was created or runs means initialization
	// finished before, even if init containers were removed since. An exited
	// one does not: after a node reboot every container is exited and the
	// new sandbox must initialize again.
	initialized := false
	for i := range pod.Spec.Containers {
		s := status.Container(pod.Spec.Containers[i].Name)
		if s != nil && (s.State == container.StateCreated || s.State == container.StateRunning) {
			initialized = true
			break
		}
	}

	// previousDone: every init container before the current one is done.
	previousDone := initialized
	restartOnFailure := shouldRestartOnFailure(pod)

	for i := len(inits) - 1; i >= 0; i-- {
		c := &inits[i]
		s := status.Container(c.Name)
		if s == nil {
			// Gone after initialization: only a sidecar must run again.
			if previousDone && isSidecar(c) {
				actions.InitContainersToStart = append(actions.InitContainersToStart, i)
			}
			continue
		}
		if previousDone && !isSidecar(c) {
			continue
		}

		switch s.State {
		case container.StateCreated:
			// Created but never started: the runtime failed to start it.
			actions.InitContainersToStart = append(actions.InitContainersToStart, i)

		case container.StateRunning:
			if !isSidecar(c) {
				break // wait for it to finish
			}
			restart, message, grace := probes.ShouldRestart(s.ID)
			if !probes.Started(s.ID) {
				if restart {
					actions.killContainer(containerToKill{ID: s.ID, Name: c.Name, Spec: c, Reason: killReasonProbe, GracePeriod: grace,
						Message: probeKillMessage(c, message)})
					actions.InitContainersToStart = append(actions.InitContainersToStart, i)
				}
				break // not started yet: the next init container waits
			}
			if i == len(inits)-1 {
				initialized = true
			} else if !previousDone {
				actions.InitContainersToStart = append(actions.InitContainersToStart, i+1)
			}
			switch {
			case containerChanged(c, s):
				actions.killContainer(containerToKill{ID: s.ID, Name: c.Name, Spec: c, Reason: killReasonDefinitionChanged,
					Message: fmt.Sprintf("Init container %s definition changed", c.Name)})
				actions.InitContainersToStart = append(actions.InitContainersToStart, i)
			case restart:
				actions.killContainer(containerToKill{ID: s.ID, Name: c.Name, Spec: c, Reason: killReasonProbe, GracePeriod: grace,
					Message: probeKillMessage(c, message)})
				actions.InitContainersToStart = append(actions.InitContainersToStart, i)
			}

		case container.StateExited:
			if isSidecar(c) {
				actions.InitContainersToStart = append(actions.InitContainersToStart, i)
				break
			}
			if isInitContainerFailed(s) {
				if !restartOnFailure {
					actions.KillPod = true
					actions.InitContainersToStart = nil
					return false
				}
				actions.InitContainersToStart = append(actions.InitContainersToStart, i)
				break
			}
			if i == len(inits)-1 {
				initialized = true
			} else {
				actions.InitContainersToStart = append(actions.InitContainersToStart, i+1)
			}

		default: // unknown: it may still run, so stop it before a restart
			if !isSidecar(c) && !restartOnFailure {
				actions.KillPod = true
				actions.InitContainersToStart = nil
				return false
			}
			actions.killContainer(containerToKill{ID: s.ID, Name: c.Name, Spec: c, Reason: killReasonUnknownState,
				Message: fmt.Sprintf("Init container is in %q state, try killing it before restart", s.State)})
			actions.InitContainersToStart = append(actions.InitContainersToStart, i)
		}

		previousDone = true
	}

	// No init container has an instance yet: start with the first.
	if !previousDone {
		actions.InitContainersToStart = append(actions.InitContainersToStart, 0)
	}
	// The walk was backwards; start them in spec order.
	slices.Reverse(actions.InitContainersToStart)
	return initialized
}
