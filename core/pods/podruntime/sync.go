package podruntime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	v1 "k8s.io/api/core/v1"
	crierrors "k8s.io/cri-api/pkg/errors"

	"github.com/microlet/microlet/core/cluster/events"
	"github.com/microlet/microlet/core/runtime/container"
)

// startBudget is how long one SyncPod goes on starting containers.
const startBudget = 5 * time.Second

// SyncPod makes the runtime match pod, given the runtime's status of it
// (from GetPodStatus; nil when it has none) and what probes found, as
// upstream's kuberuntime SyncPod:
//
//  1. compute what to do (computePodActions);
//  2. kill the pod when its sandbox must be replaced or it is finished,
//     else kill the containers that must go;
//  3. create a sandbox when needed;
//  4. start ephemeral containers added to the pod (kubectl debug);
//  5. start init containers and sidecars, in order;
//  6. start regular containers.
//
// Containers start one after another, as upstream. One sync starts them for
// at most startBudget (at least one), and none once ctx ends (the pod is
// being killed): the containers it started sync the pod again through
// PLEG, which starts the rest, so a pod of a thousand containers shows
// them running as they start, and its deletion need not wait for all of
// them to have started.
//
// It returns every step it took. A container in backoff is a failed step
// (CrashLoopBackOff, ImagePullBackOff), not an error of the node; see
// SyncResult.OnlyBackOff.
func (m *Manager) SyncPod(ctx context.Context, pod *v1.Pod, status *container.PodStatus, probes ProbeResults) *SyncResult {
	if status == nil {
		status = &container.PodStatus{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}
	}
	actions := computePodActions(pod, status, probes)
	resizes := computeResizeActions(pod, status, m.opts.Resizes, &actions)
	m.log.Debug("computed pod actions", "pod", podFullName(pod), "kill_pod", actions.KillPod, "create_sandbox", actions.CreateSandbox,
		"attempt", actions.Attempt, "init_containers_to_start", actions.InitContainersToStart,
		"containers_to_start", actions.ContainersToStart, "containers_to_kill", len(actions.ContainersToKill))

	if actions.CreateSandbox && actions.SandboxID != "" {
		m.events.Event(pod, v1.EventTypeNormal, events.SandboxChanged, "Pod sandbox changed, it will be killed and re-created.")
	}
	result := &SyncResult{}
	if !m.mountVolumes(ctx, pod, result) {
		return result
	}
	podIPs := m.podIPs(pod, status)
	if actions.KillPod {
		m.killPod(ctx, pod, status.RunningPod(), podIPs, nil, result)
		if result.failed() {
			return result
		}
		if actions.CreateSandbox {
			// The new sandbox starts over from the first init container.
			m.removeInitContainers(ctx, pod, status, 0)
		}
	} else {
		for _, k := range actions.ContainersToKill {
			step := StepResult{Action: ActionKillContainer, Target: k.Name}
			err := m.killContainer(ctx, pod, k, podIPs, nil, nil, nil)
			if err != nil {
				step.fail(ErrKillContainer, err.Error())
			}
			result.add(step)
			if err != nil {
				return result
			}
		}
	}
	if !actions.CreateSandbox {
		// Only the newest finished instance of each init container is
		// worth keeping; removing the others now spares the garbage
		// collector.
		m.removeInitContainers(ctx, pod, status, 1)
	}

	m.resizeInPlace(ctx, pod, resizes, result)
	if !actions.CreateSandbox && len(actions.InitContainersToStart) == 0 && len(actions.ContainersToStart) == 0 &&
		len(actions.EphemeralContainersToStart) == 0 {
		return result
	}
	sandbox, ok := m.prepareSandbox(ctx, pod, actions, podIPs, result)
	if !ok {
		return result
	}

	budget := m.now().Add(startBudget)
	started := 0
	// more says whether this sync may start another container: its
	// context is live, and it has started none yet or has time left.
	more := func() bool {
		if ctx.Err() != nil {
			return false
		}
		if started > 0 && m.now().After(budget) {
			m.log.Debug("start budget of this sync spent; the next sync starts the rest", "pod", podFullName(pod), "started", started)
			return false
		}
		return true
	}
	start := func(c *v1.Container, containerType string) error {
		step := m.startStep(ctx, pod, status, c, sandbox, containerType)
		result.add(step)
		started++
		return step.Err
	}
	// Before init containers, as upstream: a pod whose init container
	// fails can still be debugged.
	for _, i := range actions.EphemeralContainersToStart {
		_ = start((*v1.Container)(&pod.Spec.EphemeralContainers[i].EphemeralContainerCommon), metricEphemeralContainer)
	}
	for _, i := range actions.InitContainersToStart {
		if !more() {
			return result
		}
		c := &pod.Spec.InitContainers[i]
		// A sidecar that fails to start does not hold back the others; an
		// init container does.
		if err := start(c, metricInitContainer); err != nil && !isSidecar(c) {
			return result
		}
	}
	for _, i := range actions.ContainersToStart {
		if !more() {
			return result
		}
		_ = start(&pod.Spec.Containers[i], metricContainer) // recorded in result
	}
	return result
}

// mountVolumes writes the pod's configMap, secret, downwardAPI and
// projected volumes, as the kubelet's WaitForAttachAndMount before its
// runtime sync. A volume never set up is a failed step (FailedMount): the
// pod waits, ContainerCreating, and is synced again. One that was set up
// keeps its last files when an update fails, as upstream's reconciler.
func (m *Manager) mountVolumes(ctx context.Context, pod *v1.Pod, result *SyncResult) bool {
	err := m.volumes.setUpPodVolumes(ctx, pod)
	if err == nil {
		return true
	}
	if m.volumes.projectedSetUp(pod) {
		m.log.Warn("cannot update a volume; it keeps its last content", "pod", podFullName(pod), "error", err)
		return true
	}
	step := StepResult{Action: ActionMountVolumes, Target: podFullName(pod)}
	step.fail(ErrFailedMount, err.Error())
	result.add(step)
	return false
}

// startStep starts a container unless it is in crash-loop backoff, and
// says how it went.
func (m *Manager) startStep(ctx context.Context, pod *v1.Pod, status *container.PodStatus, c *v1.Container, sandbox sandboxRef, containerType string) StepResult {
	step := StepResult{Action: ActionStartContainer, Target: c.Name}
	if wait, msg := m.crashLoopBackOff(pod, c, status); wait {
		step.fail(ErrCrashLoopBackOff, msg)
		m.log.Debug("container is in crash-loop backoff", "pod", podFullName(pod), "container", c.Name, "message", msg)
		return step
	}
	m.metrics.startedContainers.WithLabelValues(containerType).Inc()
	if err := m.startContainer(ctx, pod, status, c, sandbox); err != nil {
		step.failWith(err, ErrRunContainer)
		m.metrics.startedContainersError.WithLabelValues(containerType, step.Reason).Inc()
		m.log.Debug("container start failed", "pod", podFullName(pod), "container", c.Name, "reason", step.Reason, "message", step.Message)
	}
	return step
}

// prepareSandbox gets the sandbox containers start in: the pod's
// directories, its resource plan, its configuration, and a new sandbox when
// actions say so. It records its steps; false means SyncPod stops.
func (m *Manager) prepareSandbox(ctx context.Context, pod *v1.Pod, actions podActions, podIPs []string, result *SyncResult) (sandboxRef, bool) {
	sandbox := sandboxRef{id: actions.SandboxID, podIPs: podIPs}
	if actions.CreateSandbox {
		m.metrics.startedPods.Inc()
	}
	// fail records the failure on the creation step, or on the
	// configuration step when no sandbox is being created.
	fail := func(message string, cause ...error) (sandboxRef, bool) {
		step := StepResult{Action: ActionConfigPodSandbox, Target: sandbox.id}
		reason := ErrConfigPodSandbox
		if actions.CreateSandbox {
			m.metrics.startedPodsErrors.Inc()
			step = StepResult{Action: ActionCreatePodSandbox, Target: podFullName(pod)}
			reason = ErrCreatePodSandbox
		}
		step.fail(reason, message)
		if len(cause) > 0 {
			step.Err = withCause(step.Err, cause[0])
		}
		result.add(step)
		return sandbox, false
	}

	// createFailed records upstream's FailedCreatePodSandBox event too.
	createFailed := func(message string, err error) (sandboxRef, bool) {
		m.events.Eventf(pod, v1.EventTypeWarning, events.FailedCreatePodSandBox, "Failed to create pod sandbox: %v", err)
		return fail(message)
	}

	if err := m.makePodDirs(pod); err != nil {
		m.events.Eventf(pod, v1.EventTypeWarning, events.FailedToMakePodDataDirectories, "error making pod data directories: %v", err)
		return fail(fmt.Sprintf("Failed to create the directories of pod %q: %v", podFullName(pod), err))
	}
	if m.opts.Resources != nil {
		plan, err := m.opts.Resources.PlanPod(ctx, pod)
		if err != nil {
			// The cause stays visible to errors.Is: "the cgroup plugin is
			// unavailable" means wait, not fail.
			return fail(fmt.Sprintf("Failed to plan the resources of pod %q: %v", podFullName(pod), err), err)
		}
		sandbox.plan = plan
	}
	config, err := m.sandboxConfig(pod, actions.Attempt, sandbox.plan)
	if err != nil {
		message := fmt.Sprintf("Failed to generate sandbox config for pod %q: %v", podFullName(pod), err)
		if actions.CreateSandbox {
			return createFailed(message, err)
		}
		return fail(message)
	}
	sandbox.config = config

	if actions.CreateSandbox {
		if err := os.MkdirAll(config.LogDirectory, 0o755); err != nil {
			return createFailed(fmt.Sprintf("Failed to create log directory for pod %q: %v", podFullName(pod), err), err)
		}
		id, err := m.cri.RunPodSandbox(ctx, config, "")
		if err != nil {
			return createFailed(fmt.Sprintf("Failed to create sandbox for pod %q: %v", podFullName(pod), err), err)
		}
		sandbox.id = id
		m.log.Info("created pod sandbox", "pod", podFullName(pod), "sandbox_id", id, "attempt", actions.Attempt)
		resp, err := m.cri.PodSandboxStatus(ctx, id, false)
		if err == nil && resp.GetStatus() == nil {
			err = errors.New("the runtime returned no status")
		}
		if err != nil {
			m.events.Eventf(pod, v1.EventTypeWarning, events.FailedStatusPodSandBox, "Unable to get pod sandbox status: %v", err)
			return fail(fmt.Sprintf("Unable to get pod sandbox status: %v", err))
		}
		if !pod.Spec.HostNetwork {
			sandbox.podIPs = sandboxIPs(resp.GetStatus())
		}
		result.add(StepResult{Action: ActionCreatePodSandbox, Target: podFullName(pod)})
	}
	result.add(StepResult{Action: ActionConfigPodSandbox, Target: sandbox.id})
	return sandbox, true
}

// podIPs are the pod's addresses: the node's for a pod on the host network
// (as the kubelet's API status, which its SyncPod uses), else its sandbox's.
func (m *Manager) podIPs(pod *v1.Pod, status *container.PodStatus) []string {
	if pod.Spec.HostNetwork {
		return ipStrings(m.nodeIPs)
	}
	return status.IPs()
}

// makePodDirs makes the pod's directory and its volumes and containers
// directories.
func (m *Manager) makePodDirs(pod *v1.Pod) error {
	dir := m.podDir(pod.UID)
	for _, d := range []string{dir, filepath.Join(dir, podVolumesDirName), filepath.Join(dir, podContainersDirName)} {
		if err := os.MkdirAll(d, 0o750); err != nil {
			return err
		}
	}
	return nil
}

// removeInitContainers removes the finished instances of each init
// container but the newest keep ones (upstream's purgeInitContainers with
// keep 0, pruneInitContainersBeforeStart with keep 1). Failures are logged:
// the garbage collector removes what is left.
func (m *Manager) removeInitContainers(ctx context.Context, pod *v1.Pod, status *container.PodStatus, keep int) {
	for i := range pod.Spec.InitContainers {
		name := pod.Spec.InitContainers[i].Name
		count := 0
		for _, s := range status.Containers {
			if s.Name != name {
				continue
			}
			if keep > 0 && s.State != container.StateExited && s.State != container.StateUnknown {
				continue
			}
			count++
			if count <= keep {
				continue
			}
			if err := m.DeleteContainer(ctx, pod.Name, pod.Namespace, s.Name, s.ID); err != nil {
				m.log.Warn("cannot remove an old init container", "pod", podFullName(pod), "container", name, "container_id", s.ID, "error", err)
			}
		}
	}
}

// DeleteContainer removes a container instance of the named pod and its log
// symlink; one already gone is no error.
func (m *Manager) DeleteContainer(ctx context.Context, podName, podNamespace, containerName, containerID string) error {
	if err := m.unlinkContainerLog(podName, podNamespace, containerName, containerID); err != nil {
		return err
	}
	if err := m.cri.RemoveContainer(ctx, containerID); err != nil && !crierrors.IsNotFound(err) {
		return err
	}
	return nil
}
