package status

import (
	"fmt"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// maxPodTerminationMessageLogLength is upstream's: the termination
// messages of a pod's containers share this many bytes.
const maxPodTerminationMessageLogLength = 1024 * 12

// TerminatePod records a pod's final status once it has finished on the
// node, as upstream: every container without a terminated state is marked
// terminated with ContainerStatusUnknown (exit code 137), since its end
// was not seen (regular containers only once the pod initialized; init
// containers up to the last one that tried to start), and a pod that is
// not static is moved to Failed unless it already is terminal.
func (m *Manager) TerminatePod(pod *v1.Pod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	log := m.log.With("pod", pod.Namespace+"/"+pod.Name, "uid", pod.UID)

	old := &pod.Status
	cached, isCached := m.statuses[pod.UID]
	if isCached {
		old = &cached.Status
	}
	status := *old.DeepCopy()

	unknown := v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
		Reason:   ContainerStatusUnknown,
		Message:  "The container could not be located when the pod was terminated",
		ExitCode: unknownExitCode,
	}}
	if hasPodInitialized(pod) {
		for i := range status.ContainerStatuses {
			if status.ContainerStatuses[i].State.Terminated == nil {
				status.ContainerStatuses[i].State = unknown
			}
		}
	}
	for i := range initializedContainers(status.InitContainerStatuses) {
		if status.InitContainerStatuses[i].State.Terminated == nil {
			status.InitContainerStatuses[i].State = unknown
		}
	}

	// Static pods keep their phase, as upstream (kubernetes#116484).
	if !IsStaticPod(pod) && !IsTerminalPhase(status.Phase) {
		if status.Phase == v1.PodRunning && isCached {
			log.Info("a terminated pod is still Running; marking it Failed")
		}
		status.Phase = v1.PodFailed
	}
	m.update(pod, status, true, true)
}

// hasPodInitialized reports whether the pod shows evidence of having
// initialized, as upstream: it has no init containers, a regular container
// left waiting once, or its last init container succeeded (or, for a
// sidecar, started).
func hasPodInitialized(pod *v1.Pod) bool {
	if len(pod.Spec.InitContainers) == 0 {
		return true
	}
	for _, s := range pod.Status.ContainerStatuses {
		if s.LastTerminationState.Terminated != nil || s.State.Waiting == nil {
			return true
		}
	}
	n := len(pod.Status.InitContainerStatuses)
	if n == 0 {
		return false
	}
	last := pod.Status.InitContainerStatuses[n-1]
	spec := containerSpec(pod.Spec.InitContainers, last.Name)
	if spec == nil {
		return false
	}
	if isRestartableInitContainer(spec) {
		return last.State.Running != nil && last.Started != nil && *last.Started
	}
	succeeded := func(t *v1.ContainerStateTerminated) bool { return t != nil && t.ExitCode == 0 }
	return succeeded(last.LastTerminationState.Terminated) || succeeded(last.State.Terminated)
}

// initializedContainers are the init container statuses up to the last
// one that tried to start (at least the first), as upstream.
func initializedContainers(statuses []v1.ContainerStatus) []v1.ContainerStatus {
	for i := len(statuses) - 1; i >= 0; i-- {
		if statuses[i].State.Waiting == nil || statuses[i].LastTerminationState.Terminated != nil {
			return statuses[:i+1]
		}
	}
	if len(statuses) > 0 {
		return statuses[:1]
	}
	return nil
}

// checkContainerStateTransition refuses a container leaving the terminated
// state when the restart policy does not allow it, as upstream.
func checkContainerStateTransition(old, status *v1.PodStatus, spec *v1.PodSpec) error {
	if spec.RestartPolicy == v1.RestartPolicyAlways {
		return nil
	}
	for _, o := range old.ContainerStatuses {
		if o.State.Terminated == nil || (o.State.Terminated.ExitCode != 0 && spec.RestartPolicy == v1.RestartPolicyOnFailure) {
			continue
		}
		for _, n := range status.ContainerStatuses {
			if o.Name == n.Name && n.State.Terminated == nil {
				return fmt.Errorf("terminated container %v attempted illegal transition to non-terminated state", n.Name)
			}
		}
	}
	for _, o := range old.InitContainerStatuses {
		c := containerSpec(spec.InitContainers, o.Name)
		if c == nil {
			return fmt.Errorf("found mismatch between pod spec and status, container: %v", o.Name)
		}
		if isRestartableInitContainer(c) || o.State.Terminated == nil || (o.State.Terminated.ExitCode != 0 && spec.RestartPolicy == v1.RestartPolicyOnFailure) {
			continue
		}
		for _, n := range status.InitContainerStatuses {
			if o.Name == n.Name && n.State.Terminated == nil {
				return fmt.Errorf("terminated init container %v attempted illegal transition to non-terminated state", n.Name)
			}
		}
	}
	return nil
}

// normalizeStatus truncates timestamps to seconds (what the API keeps),
// shares the termination message budget among the containers and sorts
// the container statuses, as upstream, so that equal statuses compare
// equal.
func normalizeStatus(pod *v1.Pod, status *v1.PodStatus) {
	budget := maxPodTerminationMessageLogLength
	if n := len(pod.Spec.Containers) + len(pod.Spec.InitContainers) + len(pod.Spec.EphemeralContainers); n > 0 {
		budget /= n
	}
	normalizeState := func(s *v1.ContainerState) {
		if s.Running != nil {
			s.Running.StartedAt = s.Running.StartedAt.Rfc3339Copy()
		}
		if t := s.Terminated; t != nil {
			t.StartedAt = t.StartedAt.Rfc3339Copy()
			t.FinishedAt = t.FinishedAt.Rfc3339Copy()
			if len(t.Message) > budget {
				t.Message = t.Message[:budget]
			}
		}
	}
	if status.StartTime != nil {
		*status.StartTime = status.StartTime.Rfc3339Copy()
	}
	for i := range status.Conditions {
		c := &status.Conditions[i]
		c.LastProbeTime = c.LastProbeTime.Rfc3339Copy()
		c.LastTransitionTime = c.LastTransitionTime.Rfc3339Copy()
	}
	for _, list := range [][]v1.ContainerStatus{status.ContainerStatuses, status.InitContainerStatuses, status.EphemeralContainerStatuses} {
		for i := range list {
			normalizeState(&list[i].State)
			normalizeState(&list[i].LastTerminationState)
		}
	}
	byName := func(a, b v1.ContainerStatus) int { return strings.Compare(a.Name, b.Name) }
	slices.SortFunc(status.ContainerStatuses, byName)
	slices.SortFunc(status.EphemeralContainerStatuses, byName)
	sortInitContainerStatuses(pod, status.InitContainerStatuses)
}

// sortInitContainerStatuses puts init container statuses in spec order,
// as upstream's SortInitContainerStatuses.
func sortInitContainerStatuses(pod *v1.Pod, statuses []v1.ContainerStatus) {
	current := 0
	for _, c := range pod.Spec.InitContainers {
		for j := current; j < len(statuses); j++ {
			if statuses[j].Name == c.Name {
				statuses[current], statuses[j] = statuses[j], statuses[current]
				current++
				break
			}
		}
	}
}
