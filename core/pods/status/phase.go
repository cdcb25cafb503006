package status

import (
	v1 "k8s.io/api/core/v1"
)

// getPhase computes a pod's phase from its container statuses, as
// upstream's getPhase (ContainerRestartRules off, its 1.34 default):
//   - Failed when a regular init container failed and the pod never
//     restarts;
//   - Pending while a regular init container has not succeeded, while a
//     sidecar has not started before the pod initialized, or while a
//     container waits to run for the first time;
//   - Running when every container has started and one is running, or
//     when all stopped but some will restart;
//   - Succeeded or Failed when all stopped for good. A pod that must stop
//     (podIsTerminal) gets one of these regardless of its restart policy,
//     except a static pod, as upstream (kubernetes#116484).
func getPhase(pod *v1.Pod, statuses []v1.ContainerStatus, podIsTerminal, podHasInitialized bool) v1.PodPhase {
	spec := pod.Spec
	pendingRestartableInit, pendingRegularInit, failedInit := 0, 0, 0
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if isRestartableInitContainer(c) {
			continue
		}
		s, ok := findStatus(statuses, c.Name)
		switch {
		case !ok, s.State.Running != nil:
			pendingRegularInit++
		case s.State.Terminated != nil:
			if s.State.Terminated.ExitCode != 0 {
				failedInit++
			}
		case s.State.Waiting != nil:
			if last := s.LastTerminationState.Terminated; last != nil {
				if last.ExitCode != 0 {
					failedInit++
				}
			} else {
				pendingRegularInit++
			}
		default:
			pendingRegularInit++
		}
	}

	unknown, running, waiting, stopped, succeeded := 0, 0, 0, 0, 0
	for i := range spec.InitContainers {
		c := &spec.InitContainers[i]
		if !isRestartableInitContainer(c) {
			continue
		}
		s, ok := findStatus(statuses, c.Name)
		switch {
		case !ok:
			unknown++
		case s.State.Running != nil:
			if s.Started == nil || !*s.Started {
				pendingRestartableInit++
			}
			running++
		case s.State.Terminated != nil:
			// A stopped sidecar does not count towards the phase.
		case s.State.Waiting != nil:
			if s.LastTerminationState.Terminated == nil {
				pendingRestartableInit++
				waiting++
			}
		default:
			pendingRestartableInit++
			unknown++
		}
	}

	for _, c := range spec.Containers {
		s, ok := findStatus(statuses, c.Name)
		switch {
		case !ok:
			unknown++
		case s.State.Running != nil:
			running++
		case s.State.Terminated != nil:
			stopped++
			if s.State.Terminated.ExitCode == 0 {
				succeeded++
			}
		case s.State.Waiting != nil:
			if s.LastTerminationState.Terminated != nil {
				stopped++
			} else {
				waiting++
			}
		default:
			unknown++
		}
	}

	if failedInit > 0 && spec.RestartPolicy == v1.RestartPolicyNever {
		return v1.PodFailed
	}
	switch {
	case pendingRegularInit > 0 || (pendingRestartableInit > 0 && !podHasInitialized) || waiting > 0:
		return v1.PodPending
	case running > 0 && unknown == 0:
		return v1.PodRunning
	case running == 0 && stopped > 0 && unknown == 0:
		if podIsTerminal && !IsStaticPod(pod) {
			if stopped == succeeded {
				return v1.PodSucceeded
			}
			return v1.PodFailed
		}
		switch {
		case spec.RestartPolicy == v1.RestartPolicyAlways:
			return v1.PodRunning // restarting
		case stopped == succeeded:
			return v1.PodSucceeded
		case spec.RestartPolicy == v1.RestartPolicyNever:
			return v1.PodFailed
		}
		return v1.PodRunning // OnFailure: restarting the failed ones
	}
	return v1.PodPending
}

func findStatus(statuses []v1.ContainerStatus, name string) (v1.ContainerStatus, bool) {
	for _, s := range statuses {
		if s.Name == name {
			return s, true
		}
	}
	return v1.ContainerStatus{}, false
}
