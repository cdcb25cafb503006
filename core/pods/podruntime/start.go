package podruntime

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"

	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/core/cluster/events"
	"github.com/microlet/microlet/core/runtime/container"
)

// sandboxRef is the sandbox containers are started in.
type sandboxRef struct {
	id     string
	config *runtimeapi.PodSandboxConfig
	podIPs []string
	plan   *ResourcePlan
}

// startContainer starts one instance of c, as upstream's startContainer:
// make sure the image is there, create the container, start it, link its
// log, and run its postStart hook, which kills it when it fails. Errors are
// reasonErrors with upstream's reasons.
func (m *Manager) startContainer(ctx context.Context, pod *v1.Pod, status *container.PodStatus, c *v1.Container, sandbox sandboxRef) error {
	image, err := m.images.ensureImage(ctx, pod, c, sandbox.config)
	if err != nil {
		// Upstream's "Error: ErrImagePull" beside the image's own events:
		// the reason alone, as the kubelet's gRPC status of it reads.
		var re *reasonError
		if errors.As(err, &re) {
			m.containerEvent(pod, c, "", v1.EventTypeWarning, events.FailedToCreateContainer, "Error: "+re.reason.Error())
		}
		return err
	}
	restartCount := 0
	if last := status.Container(c.Name); last != nil {
		restartCount = last.RestartCount + 1
	} else {
		logDir := filepath.Join(sandbox.config.LogDirectory, c.Name)
		if restartCount, err = restartCountFromLogDir(logDir); err != nil {
			m.log.Warn("cannot tell the restart count from the container's log directory; starting at 0",
				"pod", podFullName(pod), "container", c.Name, "dir", logDir, "error", err)
		}
	}
	// failed records upstream's Failed event and returns its error.
	failed := func(reason error, id, message string) error {
		m.containerEvent(pod, c, id, v1.EventTypeWarning, events.FailedToCreateContainer, "Error: "+message)
		return newReasonError(reason, "%s", message)
	}
	user, err := m.images.imageUser(ctx, image)
	if err != nil {
		return failed(ErrCreateContainerConfig, "", err.Error())
	}
	target, err := targetContainerID(pod, c.Name, status)
	if err != nil {
		return failed(ErrCreateContainerConfig, "", err.Error())
	}
	config, err := m.containerConfig(ctx, pod, containerInstance{
		spec: c, restartCount: restartCount, imageRef: image.ref, user: user, podIPs: sandbox.podIPs, plan: sandbox.plan,
		targetID: target,
	})
	if err != nil {
		return failed(ErrCreateContainerConfig, "", err.Error())
	}
	id, err := m.cri.CreateContainer(ctx, sandbox.id, config, sandbox.config)
	if err != nil {
		return failed(ErrCreateContainer, "", runtimeMessage(err))
	}
	m.containerEvent(pod, c, id, v1.EventTypeNormal, events.CreatedContainer, "Created container: "+c.Name)
	if n, ok := m.opts.Resources.(ContainerCreatedNotifier); ok {
		n.ContainerCreated(pod, c)
	}
	if err := m.cri.StartContainer(ctx, id); err != nil {
		return failed(ErrRunContainer, id, runtimeMessage(err))
	}
	m.containerEvent(pod, c, id, v1.EventTypeNormal, events.StartedContainer, "Started container "+c.Name)
	m.setActuated(pod, c)
	m.log.Info("started container", "pod", podFullName(pod), "container", c.Name, "container_id", id, "restart_count", restartCount)
	m.linkContainerLog(sandbox.config, config, id)

	if c.Lifecycle != nil && c.Lifecycle.PostStart != nil {
		msg, err := m.hooks.run(ctx, pod, c, id, c.Lifecycle.PostStart, sandbox.podIPs)
		if err != nil {
			m.log.Warn("postStart hook failed; killing the container", "pod", podFullName(pod), "container", c.Name, "error", err)
			// The event does not carry the hook's output, which may hold
			// secrets (upstream's rule).
			m.containerEvent(pod, c, id, v1.EventTypeWarning, events.FailedPostStartHook, "PostStartHook failed")
			kill := containerToKill{ID: id, Name: c.Name, Spec: c, Reason: killReasonFailedPostStart, Message: string(killReasonFailedPostStart)}
			if err := m.killContainer(ctx, pod, kill, sandbox.podIPs, nil, nil, nil); err != nil {
				m.log.Warn("cannot kill the container whose postStart hook failed", "pod", podFullName(pod), "container", c.Name, "error", err)
			}
			return newReasonError(ErrPostStartHook, "%s", msg)
		}
	}
	return nil
}

// targetContainerID is the runtime ID of the container whose process
// namespace ephemeral container name shares (its targetContainerName, as
// kubectl debug --target sets it), as upstream's getTargetID; "" for any
// other container.
func targetContainerID(pod *v1.Pod, name string, status *container.PodStatus) (string, error) {
	for _, e := range pod.Spec.EphemeralContainers {
		if e.Name != name || e.TargetContainerName == "" {
			continue
		}
		target := status.Container(e.TargetContainerName)
		if target == nil {
			return "", fmt.Errorf("unable to find target container %v", e.TargetContainerName)
		}
		return target.ID, nil
	}
	return "", nil
}

// containerEvent records an event about container c of pod, whose
// instance id (when known) is named by c's name in the message.
func (m *Manager) containerEvent(pod *v1.Pod, c *v1.Container, id, eventType, reason, message string) {
	events.RecordContainer(m.events, pod, c.Name, id, eventType, reason, message)
}

// runtimeMessage is what the runtime said, without the client's wrapping,
// as upstream shows it to users.
func runtimeMessage(err error) string {
	var grpcErr interface{ GRPCStatus() *status.Status }
	if errors.As(err, &grpcErr) {
		return grpcErr.GRPCStatus().Message()
	}
	return err.Error()
}

// crashLoopBackOff reports whether c must wait before it starts again
// because its last instance exited too recently, as upstream's doBackOff,
// with the message users see. When it need not wait, the start counts as a
// failure for the next decision.
func (m *Manager) crashLoopBackOff(pod *v1.Pod, c *v1.Container, status *container.PodStatus) (bool, string) {
	var last *container.ContainerStatus
	for _, s := range status.Containers {
		if s.Name == c.Name && s.State == container.StateExited {
			last = s
			break
		}
	}
	if last == nil {
		return false, ""
	}
	key := crashLoopKey(pod, c)
	if m.crashLoop.inBackOffSince(key, last.FinishedAt) {
		m.containerEvent(pod, c, "", v1.EventTypeWarning, events.BackOffStartContainer,
			fmt.Sprintf("Back-off restarting failed container %s in pod %s", c.Name, podFullName(pod)))
		return true, fmt.Sprintf("back-off %s restarting failed container=%s pod=%s", m.crashLoop.delay(key), c.Name, podFullName(pod))
	}
	m.crashLoop.next(key, last.FinishedAt)
	return false, ""
}

// crashLoopKey identifies a container's backoff. As upstream's
// GetBackoffKey it includes the image and resources, so changing them
// starts the backoff over.
func crashLoopKey(pod *v1.Pod, c *v1.Container) string {
	return fmt.Sprintf("%s_%s_%s_%s", pod.UID, c.Name, c.Image, c.Resources.String())
}
