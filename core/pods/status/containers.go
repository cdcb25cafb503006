package status

import (
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/microlet/microlet/core/runtime/container"
)

// Container waiting and termination reasons, upstream's.
const (
	// ContainerCreating is a container's default waiting reason.
	ContainerCreating = "ContainerCreating"
	// PodInitializing replaces it while the pod has init containers.
	PodInitializing = "PodInitializing"
	// ContainerStatusUnknown terminates a container that vanished from
	// the runtime without its exit being seen.
	ContainerStatusUnknown = "ContainerStatusUnknown"
)

// unknownExitCode is what upstream reports for a container whose exit was
// not seen: the code of SIGKILL.
const unknownExitCode = 137

// containerID is a container's ID as the API shows it, "<runtime>://<id>".
func (g *Generator) containerID(id string) string {
	return g.RuntimeName + "://" + id
}

// convertInstance turns one runtime container instance into an API
// container status, as the convertContainerStatus closure of upstream's
// convertToAPIContainerStatuses.
func (g *Generator) convertInstance(cs *container.ContainerStatus, old *v1.ContainerStatus) *v1.ContainerStatus {
	id := g.containerID(cs.ID)
	s := &v1.ContainerStatus{
		Name:         cs.Name,
		RestartCount: int32(cs.RestartCount),
		Image:        cs.Image,
		// The API's imageID is the digested reference, as upstream.
		ImageID:     cs.ImageRef,
		ContainerID: id,
	}
	if old != nil {
		s.VolumeMounts = old.VolumeMounts
	}
	switch {
	case cs.State == container.StateRunning:
		s.State.Running = &v1.ContainerStateRunning{StartedAt: metav1.NewTime(cs.StartedAt)}
	case cs.State == container.StateCreated:
		s.State.Waiting = &v1.ContainerStateWaiting{}
	case cs.State == container.StateExited:
		s.State.Terminated = &v1.ContainerStateTerminated{
			ExitCode:    cs.ExitCode,
			Reason:      cs.Reason,
			Message:     cs.Message,
			StartedAt:   metav1.NewTime(cs.StartedAt),
			FinishedAt:  metav1.NewTime(cs.FinishedAt),
			ContainerID: id,
		}
	case cs.State == container.StateUnknown && old != nil && old.State.Running != nil:
		// It ran and is not known to run any more: it died unseen. Saying
		// "waiting" would let a run-once pod run twice.
		s.State.Terminated = &v1.ContainerStateTerminated{
			Reason:   ContainerStatusUnknown,
			Message:  "The container could not be located when the pod was terminated",
			ExitCode: unknownExitCode,
		}
		s.RestartCount = old.RestartCount + 1
	default:
		s.State.Waiting = &v1.ContainerStateWaiting{}
	}
	return s
}

// containerStatuses is upstream's convertToAPIContainerStatuses for one
// list of containers (regular, init or ephemeral): the newest instance of
// each gives its state and the one before its lastState; a container with
// no instance waits (ContainerCreating, or PodInitializing in a pod with
// init containers), keeping its restart count and lastState, and is shown
// terminated-unknown if it ran before and vanished; a container that will
// be restarted and whose last start failed waits with that failure's
// reason from the reason cache.
func (g *Generator) containerStatuses(pod *v1.Pod, runtime *container.PodStatus, previous []v1.ContainerStatus, containers []v1.Container, hasInitContainers, isInitContainer bool) []v1.ContainerStatus {
	oldStatuses := make(map[string]v1.ContainerStatus, len(containers))
	for _, s := range previous {
		oldStatuses[s.Name] = s
	}

	defaultWaiting := ContainerCreating
	if hasInitContainers {
		defaultWaiting = PodInitializing
	}
	statuses := make(map[string]*v1.ContainerStatus, len(containers))
	for i := range containers {
		c := &containers[i]
		s := &v1.ContainerStatus{
			Name:         c.Name,
			Image:        c.Image,
			State:        v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: defaultWaiting}},
			VolumeMounts: g.volumeMountStatuses(c),
		}
		if old, ok := oldStatuses[c.Name]; ok {
			if old.State.Terminated != nil {
				s = &old
			} else {
				s.RestartCount = old.RestartCount
				s.LastTerminationState = old.LastTerminationState
			}
		}
		statuses[c.Name] = s
	}

	// A container that ran and vanished from the runtime without its exit
	// being seen did terminate; say so rather than go back to waiting.
	for _, c := range containers {
		if runtime.Container(c.Name) != nil {
			continue
		}
		old, ok := oldStatuses[c.Name]
		if !ok || old.State.Terminated != nil || old.State.Running == nil {
			continue
		}
		s := statuses[c.Name]
		if s.State.Waiting == nil || s.State.Waiting.Reason != defaultWaiting || s.LastTerminationState.Terminated != nil {
			continue
		}
		s.LastTerminationState.Terminated = &v1.ContainerStateTerminated{
			Reason:   ContainerStatusUnknown,
			Message:  "The container could not be located when the pod was deleted.  The container used to be Running",
			ExitCode: unknownExitCode,
		}
		if pod.DeletionTimestamp == nil {
			// Not deleted, so it was restarted.
			s.RestartCount++
		}
	}

	// The newest instance gives the state, the one before the lastState.
	instances := slices.Clone(runtime.Containers)
	slices.SortStableFunc(instances, func(a, b *container.ContainerStatus) int { return b.CreatedAt.Compare(a.CreatedAt) })
	seen := map[string]int{}
	for _, cs := range instances {
		if _, ok := statuses[cs.Name]; !ok || seen[cs.Name] >= 2 {
			continue
		}
		var old *v1.ContainerStatus
		if o, ok := oldStatuses[cs.Name]; ok {
			old = &o
		}
		s := g.convertInstance(cs, old)
		if spec := podContainerSpec(pod, cs.Name); spec != nil {
			if g.Resizes != nil {
				s.Resources, s.AllocatedResources = g.Resizes.ContainerResources(pod, spec, seen[cs.Name] == 0 && cs.State == container.StateRunning)
			} else {
				s.Resources = spec.Resources.DeepCopy()
				s.AllocatedResources = spec.Resources.Requests
			}
		}
		if seen[cs.Name] == 0 {
			statuses[cs.Name] = s
		} else {
			statuses[cs.Name].LastTerminationState = s.State
		}
		seen[cs.Name]++
	}

	// A container due to be restarted whose last start failed waits with
	// the failure's reason.
	for i := range containers {
		c := &containers[i]
		newest := runtime.Container(c.Name)
		if isInitContainer && newest != nil && newest.State == container.StateExited && newest.ExitCode == 0 {
			continue // a succeeded init container is not restarted
		}
		if !shouldContainerBeRestarted(c, pod, newest) {
			continue
		}
		reason, ok := g.reason(pod, c.Name)
		if !ok {
			continue
		}
		s := statuses[c.Name]
		if s.State.Terminated != nil {
			s.LastTerminationState = s.State
		}
		s.State = v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: reason.Reason, Message: reason.Message}}
	}

	out := make([]v1.ContainerStatus, 0, len(statuses))
	if isInitContainer {
		// In spec order.
		for _, c := range containers {
			if s, ok := statuses[c.Name]; ok {
				out = append(out, *s)
			}
		}
		return out
	}
	for _, s := range statuses {
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b v1.ContainerStatus) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func (g *Generator) reason(pod *v1.Pod, name string) (Reason, bool) {
	if g.Reasons == nil {
		return Reason{}, false
	}
	return g.Reasons.Get(pod.UID, name)
}

// podContainerSpec finds a container of any kind by name.
func podContainerSpec(pod *v1.Pod, name string) *v1.Container {
	if c := containerSpec(pod.Spec.Containers, name); c != nil {
		return c
	}
	if c := containerSpec(pod.Spec.InitContainers, name); c != nil {
		return c
	}
	for i := range pod.Spec.EphemeralContainers {
		if pod.Spec.EphemeralContainers[i].Name == name {
			c := v1.Container(pod.Spec.EphemeralContainers[i].EphemeralContainerCommon)
			return &c
		}
	}
	return nil
}

// shouldContainerBeRestarted is upstream's ShouldContainerBeRestarted
// (ContainerRestartRules off) given the container's newest instance.
func shouldContainerBeRestarted(c *v1.Container, pod *v1.Pod, newest *container.ContainerStatus) bool {
	switch {
	case pod.DeletionTimestamp != nil:
		return false
	case newest == nil:
		return true
	case newest.State == container.StateRunning:
		return false
	case newest.State == container.StateUnknown || newest.State == container.StateCreated:
		return true
	case pod.Spec.RestartPolicy == v1.RestartPolicyNever:
		return false
	case pod.Spec.RestartPolicy == v1.RestartPolicyOnFailure:
		return newest.ExitCode != 0
	}
	return true
}

// volumeMountStatuses are a container's mounts as its status shows them,
// as upstream with RecursiveReadOnlyMounts (GA): a read-only mount says
// whether it is recursively read-only, which needs the runtime's support.
func (g *Generator) volumeMountStatuses(c *v1.Container) []v1.VolumeMountStatus {
	var out []v1.VolumeMountStatus
	for _, m := range c.VolumeMounts {
		s := v1.VolumeMountStatus{Name: m.Name, MountPath: m.MountPath, ReadOnly: m.ReadOnly}
		if m.ReadOnly {
			mode := v1.RecursiveReadOnlyDisabled
			if g.recursiveReadOnly(m) {
				mode = v1.RecursiveReadOnlyEnabled
			}
			s.RecursiveReadOnly = &mode
		}
		out = append(out, s)
	}
	return out
}

// recursiveReadOnly is whether a read-only mount is recursively read-only:
// it asks for it (IfPossible or Enabled), has no mount propagation and the
// runtime supports it. A mount the runtime cannot make recursively
// read-only shows Disabled, as upstream shows a mount it cannot resolve.
func (g *Generator) recursiveReadOnly(m v1.VolumeMount) bool {
	if m.RecursiveReadOnly == nil || *m.RecursiveReadOnly == v1.RecursiveReadOnlyDisabled {
		return false
	}
	if m.MountPropagation != nil && *m.MountPropagation != v1.MountPropagationNone {
		return false
	}
	switch *m.RecursiveReadOnly {
	case v1.RecursiveReadOnlyIfPossible, v1.RecursiveReadOnlyEnabled:
		return g.SupportsRecursiveReadOnly
	}
	return false
}
