package podruntime

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/core/pods/resize"
	"github.com/microlet/microlet/core/runtime/container"
)

// ResizeTracker is the in-place resize record (core/pods/resize): what each
// running container was last given, and why actuating a resize failed.
type ResizeTracker interface {
	Actuated(uid types.UID, name string) (v1.ResourceRequirements, bool)
	SetActuated(uid types.UID, name string, r v1.ResourceRequirements)
	SetError(uid types.UID, generation int64, message string)
	ClearError(uid types.UID)
}

// PodResizer is a ResourcePlanner that resizes a running pod: it plans the
// pod at its new resources and widens the pod cgroup to hold both the old
// and the new settings, so that containers can grow or shrink in any
// order; finish then sets the pod cgroup to the new settings.
type PodResizer interface {
	ResizePod(ctx context.Context, pod *v1.Pod) (plan *ResourcePlan, finish func() error, err error)
}

// containerResize is a running container whose cpu or memory must change.
type containerResize struct {
	id   string
	spec *v1.Container
}

// computeResizeActions is upstream's computePodResizeAction for every
// running resizable container that is not being killed: its allocated cpu
// and memory (the pod's spec here) against what it was given. A change to
// a resource whose resizePolicy is RestartContainer restarts the container;
// any other is done in place. A container whose actuated resources are not
// known (the core restarted) is updated in place, never restarted: the
// update is idempotent.
func computeResizeActions(pod *v1.Pod, status *container.PodStatus, tracker ResizeTracker, actions *podActions) []containerResize {
	if tracker == nil || actions.KillPod {
		return nil
	}
	var out []containerResize
	consider := func(c *v1.Container, start func()) {
		s := status.Container(c.Name)
		if s == nil || s.State != container.StateRunning {
			return
		}
		for _, k := range actions.ContainersToKill {
			if k.ID == s.ID {
				return
			}
		}
		actuated, known := tracker.Actuated(pod.UID, c.Name)
		changed := resize.ChangedResources(c.Resources, actuated)
		if known && len(changed) == 0 {
			return
		}
		if known && restartOnResize(c, changed) {
			actions.killContainer(containerToKill{ID: s.ID, Name: c.Name, Spec: c, Reason: killReasonResize,
				Message: fmt.Sprintf("Container %s resize requires restart", c.Name)})
			start()
			return
		}
		out = append(out, containerResize{id: s.ID, spec: c})
	}
	for i := range pod.Spec.InitContainers {
		if c := &pod.Spec.InitContainers[i]; isSidecar(c) {
			consider(c, func() { actions.InitContainersToStart = append(actions.InitContainersToStart, i) })
		}
	}
	for i := range pod.Spec.Containers {
		consider(&pod.Spec.Containers[i], func() { actions.ContainersToStart = append(actions.ContainersToStart, i) })
	}
	return out
}

// restartOnResize: a changed resource whose policy is RestartContainer
// (unset is NotRequired).
func restartOnResize(c *v1.Container, changed []v1.ResourceName) bool {
	for _, p := range c.ResizePolicy {
		for _, name := range changed {
			if p.ResourceName == name && p.RestartPolicy == v1.RestartContainer {
				return true
			}
		}
	}
	return false
}

// resizeInPlace gives running containers their new resources, as
// upstream's doPodResizeAction: the pod cgroup first widened, then each
// container's resources through UpdateContainerResources, then the pod
// cgroup set to the new plan. A failure is the resize's error in the
// PodResizeInProgress condition and the pod is synced again.
func (m *Manager) resizeInPlace(ctx context.Context, pod *v1.Pod, resizes []containerResize, result *SyncResult) {
	if len(resizes) == 0 {
		return
	}
	step := StepResult{Action: ActionResizePodInPlace, Target: podFullName(pod)}
	err := m.doResize(ctx, pod, resizes)
	if err != nil {
		step.fail(ErrResizePodInPlace, err.Error())
		m.opts.Resizes.SetError(pod.UID, pod.Generation, err.Error())
		m.log.Warn("in-place resize failed", "pod", podFullName(pod), "error", err)
	} else {
		m.opts.Resizes.ClearError(pod.UID)
		m.log.Info("resized pod in place", "pod", podFullName(pod), "containers", len(resizes))
	}
	result.add(step)
}

func (m *Manager) doResize(ctx context.Context, pod *v1.Pod, resizes []containerResize) error {
	resizer, ok := m.opts.Resources.(PodResizer)
	if !ok {
		// No cgroup plan: containers run with the runtime's defaults,
		// which a resize does not change.
		for _, r := range resizes {
			m.opts.Resizes.SetActuated(pod.UID, r.spec.Name, r.spec.Resources)
		}
		return nil
	}
	plan, finish, err := resizer.ResizePod(ctx, pod)
	if err != nil {
		return fmt.Errorf("cannot plan the resized pod: %w", err)
	}
	var errs []error
	for _, r := range resizes {
		linux := plan.Containers[r.spec.Name]
		if linux == nil {
			// Nothing planned for it: nothing to change.
			m.opts.Resizes.SetActuated(pod.UID, r.spec.Name, r.spec.Resources)
			continue
		}
		if err := m.cri.UpdateContainerResources(ctx, r.id, &runtimeapi.ContainerResources{Linux: linux}); err != nil {
			errs = append(errs, fmt.Errorf("container %s: %w", r.spec.Name, err))
			continue
		}
		m.opts.Resizes.SetActuated(pod.UID, r.spec.Name, r.spec.Resources)
	}
	if len(errs) == 0 {
		if err := finish(); err != nil {
			errs = append(errs, fmt.Errorf("pod cgroup: %w", err))
		}
	}
	return errors.Join(errs...)
}

// setActuated records what a started container was given.
func (m *Manager) setActuated(pod *v1.Pod, c *v1.Container) {
	if m.opts.Resizes != nil {
		m.opts.Resizes.SetActuated(pod.UID, c.Name, c.Resources)
	}
}
