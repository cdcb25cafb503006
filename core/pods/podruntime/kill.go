package podruntime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	crierrors "k8s.io/cri-api/pkg/errors"

	"github.com/microlet/microlet/core/cluster/events"
	"github.com/microlet/microlet/core/runtime/container"
)

const (
	// minimumGracePeriod is upstream's minimumGracePeriodInSeconds: every
	// container gets at least this long to stop, whatever the preStop hook
	// or the ordering used up.
	minimumGracePeriod = 2
	// orphanGracePeriod is the grace of containers whose pod is gone, as
	// upstream's SyncTerminatingRuntimePod.
	orphanGracePeriod = 1
)

// KillPod stops a pod's running containers in parallel, regular ones
// first and sidecars after them in reverse order, each with its grace
// period (the pod's terminationGracePeriodSeconds, or gracePeriodOverride),
// and then stops its sandboxes. pod is nil for a pod no source knows any
// more: what killing needs (grace period, preStop hook) is then read from
// the containers' annotations, with a grace of 1 s unless overridden.
// Killing a pod that is already dead succeeds, and so does killing a pod
// the runtime has nothing of (runtimePod nil).
func (m *Manager) KillPod(ctx context.Context, pod *v1.Pod, runtimePod *container.Pod, gracePeriodOverride *int64) error {
	if runtimePod == nil {
		return nil
	}
	if pod == nil && gracePeriodOverride == nil {
		grace := int64(orphanGracePeriod)
		gracePeriodOverride = &grace
	}
	// The addresses serve only preStop hooks; reading them is a CRI call
	// before the first container stops, so it is made only for a hook (as
	// upstream reads the pod's status only for an HTTP hook).
	var podIPs []string
	if mayRunPreStop(pod, runtimePod) {
		podIPs = m.runtimePodIPs(ctx, pod != nil && pod.Spec.HostNetwork, runtimePod)
	}
	var result SyncResult
	m.killPod(ctx, pod, runtimePod, podIPs, gracePeriodOverride, &result)
	return result.Err()
}

// killPod is KillPod recording its steps in result.
func (m *Manager) killPod(ctx context.Context, pod *v1.Pod, runtimePod *container.Pod, podIPs []string, gracePeriodOverride *int64, result *SyncResult) {
	running := liveContainers(runtimePod)
	var ordering *terminationOrdering
	if pod != nil && hasSidecars(pod) {
		names := make([]string, len(running))
		for i, c := range running {
			names[i] = c.Name
		}
		ordering = newTerminationOrdering(pod, names)
	}
	steps := make([]StepResult, len(running))
	podSlots := newPodStopSlots()
	var wg sync.WaitGroup
	for i, c := range running {
		wg.Add(1)
		go func() {
			defer wg.Done()
			steps[i] = StepResult{Action: ActionKillContainer, Target: c.Name}
			kill := containerToKill{ID: c.ID, Name: c.Name}
			if err := m.killContainer(ctx, pod, kill, podIPs, gracePeriodOverride, ordering, podSlots); err != nil {
				steps[i].fail(ErrKillContainer, err.Error())
			}
		}()
	}
	wg.Wait()
	result.Steps = append(result.Steps, steps...)

	step := StepResult{Action: ActionKillPodSandbox, Target: fmt.Sprintf("%s_%s(%s)", runtimePod.Name, runtimePod.Namespace, runtimePod.UID)}
	var errs []error
	for _, s := range runtimePod.Sandboxes {
		if err := m.cri.StopPodSandbox(ctx, s.ID); err != nil && !crierrors.IsNotFound(err) {
			errs = append(errs, err)
		}
	}
	if err := errors.Join(errs...); err != nil {
		step.fail(ErrKillPodSandbox, err.Error())
	}
	result.add(step)
}

// liveContainers are the pod's containers that run, or may.
func liveContainers(runtimePod *container.Pod) []*container.Container {
	var live []*container.Container
	for _, c := range runtimePod.Containers {
		if c.State.MayRun() {
			live = append(live, c)
		}
	}
	return live
}

// mayRunPreStop says whether killing the pod's live containers can run a
// preStop hook: one its spec gives, or one kept in the annotations of a
// container the spec does not name (pod is nil for an orphan, whose
// containers all are such).
func mayRunPreStop(pod *v1.Pod, runtimePod *container.Pod) bool {
	for _, c := range liveContainers(runtimePod) {
		if pod == nil {
			return true
		}
		spec := containerSpec(pod, c.Name)
		if spec == nil || (spec.Lifecycle != nil && spec.Lifecycle.PreStop != nil) {
			return true
		}
	}
	return false
}

// killContainer stops one container: its preStop hook first, bounded by the
// grace period, then its turn in the termination ordering, then a stop slot
// (podSlots: its pod's kill's, nil for a lone stop; then the pod's own stop
// or one of the node's),
// then StopContainer with what is left of the grace period, at least 2 s.
// The waits count against the grace period, as the kubelet counts the
// preStop hook's time: containers beyond the slots of a very large pod get
// their SIGTERM later, and the pod's stop still ends near its grace period.
// pod is nil for an orphan.
func (m *Manager) killContainer(ctx context.Context, pod *v1.Pod, kill containerToKill, podIPs []string, gracePeriodOverride *int64, ordering *terminationOrdering, podSlots *podStopSlots) error {
	spec := kill.Spec
	if spec == nil && pod != nil {
		spec = containerSpec(pod, kill.Name)
	}
	if spec == nil {
		// An orphan, or a container the pod's spec no longer names: what
		// killing it needs is in its annotations.
		restoredPod, restoredSpec, err := m.restoreSpecFromAnnotations(ctx, kill.ID)
		if crierrors.IsNotFound(err) {
			return nil // removed meanwhile: nothing left to stop
		}
		if err != nil {
			return err
		}
		if pod == nil {
			pod = restoredPod
		}
		spec = restoredSpec
	}
	grace := terminationGracePeriod(pod, kill)
	if gracePeriodOverride != nil {
		grace = *gracePeriodOverride
	}
	message := kill.Message
	if message == "" {
		message = "Stopping container " + spec.Name
	}
	events.RecordContainer(m.events, pod, spec.Name, kill.ID, v1.EventTypeNormal, events.KillingContainer, message)
	if spec.Lifecycle != nil && spec.Lifecycle.PreStop != nil && grace > 0 {
		grace -= m.runPreStop(ctx, pod, spec, kill.ID, podIPs, grace)
	}
	if ordering != nil && grace > 0 {
		// The grace period is in seconds; the wait is cut to whole ones.
		grace -= int64(ordering.waitForTurn(spec.Name, grace).Seconds())
	}
	release, waited, err := m.stopSlots.acquire(ctx, podSlots)
	if err != nil {
		return err
	}
	defer release()
	grace = max(grace-int64(waited.Seconds()), minimumGracePeriod)
	m.log.Info("stopping container", "pod", podFullName(pod), "container", spec.Name, "container_id", kill.ID,
		"reason", message, "grace_period", grace)
	if err := m.cri.StopContainer(ctx, kill.ID, grace); err != nil && !crierrors.IsNotFound(err) {
		return err
	}
	if ordering != nil {
		ordering.containerTerminated(spec.Name)
	}
	return nil
}

// runPreStop runs a container's preStop hook for at most gracePeriod
// seconds and returns the whole seconds it took.
func (m *Manager) runPreStop(ctx context.Context, pod *v1.Pod, c *v1.Container, containerID string, podIPs []string, gracePeriod int64) int64 {
	start := time.Now()
	hookCtx, cancel := context.WithTimeout(ctx, time.Duration(gracePeriod)*time.Second)
	defer cancel()
	if msg, err := m.hooks.run(hookCtx, pod, c, containerID, c.Lifecycle.PreStop, podIPs); err != nil {
		// As upstream: a failed or unfinished preStop hook does not stop
		// the kill.
		m.log.Warn("preStop hook failed", "pod", podFullName(pod), "container", c.Name, "error", err, "message", msg)
		// Without the hook's output, which may hold secrets (upstream's rule).
		m.containerEvent(pod, c, containerID, v1.EventTypeWarning, events.FailedPreStopHook, "PreStopHook failed")
	}
	return int64(time.Since(start).Seconds())
}

// terminationGracePeriod is upstream's setTerminationGracePeriod: the pod's
// deletion grace period, else a failed probe's own grace period, else the
// pod's terminationGracePeriodSeconds, else the minimum.
func terminationGracePeriod(pod *v1.Pod, kill containerToKill) int64 {
	switch {
	case pod.DeletionGracePeriodSeconds != nil:
		return *pod.DeletionGracePeriodSeconds
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		if kill.Reason == killReasonProbe && kill.GracePeriod != nil {
			return *kill.GracePeriod
		}
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return minimumGracePeriod
}

// restoreSpecFromAnnotations rebuilds what killing a container needs from
// its labels and annotations, for a pod whose spec is gone.
func (m *Manager) restoreSpecFromAnnotations(ctx context.Context, containerID string) (*v1.Pod, *v1.Container, error) {
	resp, err := m.cri.ContainerStatus(ctx, containerID, false)
	if err != nil {
		return nil, nil, err
	}
	s := resp.GetStatus()
	if s == nil {
		return nil, nil, fmt.Errorf("the runtime returned no status for container %s", containerID)
	}
	l := containerFromLabels(s.Labels)
	a, err := containerFromAnnotations(s.Annotations)
	if err != nil {
		m.log.Warn("container annotations do not parse; killing it with what they say", "container_id", containerID, "error", err)
	}
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			UID: l.PodUID, Name: l.PodName, Namespace: l.PodNamespace,
			DeletionGracePeriodSeconds: a.PodDeletionGracePeriod,
		},
		Spec: v1.PodSpec{TerminationGracePeriodSeconds: a.PodTerminationGracePeriod},
	}
	c := &v1.Container{Name: l.ContainerName, Ports: a.Ports, TerminationMessagePath: a.TerminationMessagePath}
	if a.PreStopHandler != nil {
		c.Lifecycle = &v1.Lifecycle{PreStop: a.PreStopHandler}
	}
	return pod, c, nil
}
