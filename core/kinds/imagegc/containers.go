package imagegc

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubelettypes "k8s.io/kubelet/pkg/types"

	imagegcv1 "github.com/microlet/microlet/proto/microlet/imagegc/v1"
)

// CollectContainers runs one container GC (upstream kuberuntime_gc.go
// GarbageCollect): it sends the plugin every container that does not run
// and every sandbox that is not ready, and removes what the plan names:
// containers first, with their logs, then sandboxes (stopped, then removed),
// then the log directories of deleted pods. removeAll asks the plugin to
// remove every dead container and sandbox whatever its age and the limits
// (node-level reclaim). An error wrapping pluginhost.ErrUnavailable means
// the plugin does not serve and nothing was done.
func (m *Manager) CollectContainers(ctx context.Context, removeAll bool) error {
	m.running.Lock()
	defer m.running.Unlock()

	containers, err := m.opts.Runtime.ListContainers(ctx, nil)
	if err != nil {
		return fmt.Errorf("container GC: %w", err)
	}
	sandboxes, err := m.opts.Runtime.ListPodSandbox(ctx, nil)
	if err != nil {
		return fmt.Errorf("container GC: %w", err)
	}
	now := m.opts.Clock.Now()
	m.images.used(now, containers)

	dead, deadSandboxes := m.deadOnes(containers, sandboxes)
	var plan *imagegcv1.PlanContainerGCResponse
	err = m.plan(ctx, "imagegc plugin PlanContainerGC", func(ctx context.Context, c imagegcv1.ImageGCServiceClient) error {
		stream, err := c.PlanContainerGC(ctx)
		if err != nil {
			return err
		}
		items := make([]*imagegcv1.PlanContainerGCRequest, 0, 1+len(dead)+len(deadSandboxes))
		items = append(items, &imagegcv1.PlanContainerGCRequest{Item: &imagegcv1.PlanContainerGCRequest_Context{
			Context: &imagegcv1.ContainerGCContext{Now: timestamppb.New(now), RemoveAll: removeAll}}})
		for _, c := range dead {
			items = append(items, &imagegcv1.PlanContainerGCRequest{Item: &imagegcv1.PlanContainerGCRequest_Container{Container: c}})
		}
		for _, s := range deadSandboxes {
			items = append(items, &imagegcv1.PlanContainerGCRequest{Item: &imagegcv1.PlanContainerGCRequest_Sandbox{Sandbox: s}})
		}
		for _, item := range items {
			if err := stream.Send(item); err != nil {
				return err
			}
		}
		plan, err = stream.CloseAndRecv()
		return err
	})
	if err != nil {
		return err
	}
	return m.removeContainers(ctx, plan, containers, sandboxes)
}

// deadOnes are the containers that do not run and the sandboxes that are not
// ready, as the plugin receives them. Those without the pod labels the core
// puts on what it creates are not the core's and are left alone.
func (m *Manager) deadOnes(containers []*runtimeapi.Container, sandboxes []*runtimeapi.PodSandbox) ([]*imagegcv1.DeadContainer, []*imagegcv1.Sandbox) {
	deleted := map[string]bool{}
	isDeleted := func(uid string) bool {
		d, ok := deleted[uid]
		if !ok {
			d = m.opts.Pods.PodDeleted(types.UID(uid))
			deleted[uid] = d
		}
		return d
	}
	inSandbox := map[string]int32{}
	var dead []*imagegcv1.DeadContainer
	for _, c := range containers {
		inSandbox[c.GetPodSandboxId()]++
		uid := c.GetLabels()[kubelettypes.KubernetesPodUIDLabel]
		if uid == "" || c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			continue
		}
		dead = append(dead, &imagegcv1.DeadContainer{
			Id:            c.GetId(),
			SandboxId:     c.GetPodSandboxId(),
			PodUid:        uid,
			PodNamespace:  c.GetLabels()[kubelettypes.KubernetesPodNamespaceLabel],
			PodName:       c.GetLabels()[kubelettypes.KubernetesPodNameLabel],
			ContainerName: c.GetLabels()[kubelettypes.KubernetesContainerNameLabel],
			CreatedAt:     createdAt(c.GetCreatedAt()),
			PodDeleted:    isDeleted(uid),
		})
	}
	var deadSandboxes []*imagegcv1.Sandbox
	for _, s := range sandboxes {
		uid := s.GetLabels()[kubelettypes.KubernetesPodUIDLabel]
		if uid == "" || s.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			continue
		}
		deadSandboxes = append(deadSandboxes, &imagegcv1.Sandbox{
			Id:             s.GetId(),
			PodUid:         uid,
			PodNamespace:   s.GetMetadata().GetNamespace(),
			PodName:        s.GetMetadata().GetName(),
			CreatedAt:      createdAt(s.GetCreatedAt()),
			PodDeleted:     isDeleted(uid),
			ContainerCount: inSandbox[s.GetId()],
		})
	}
	return dead, deadSandboxes
}

// createdAt turns CRI nanoseconds into a timestamp; unset when unknown.
func createdAt(nanos int64) *timestamppb.Timestamp {
	if nanos <= 0 {
		return nil
	}
	return timestamppb.New(time.Unix(0, nanos))
}

// removeContainers carries out a plan. Only what the lists had is removed:
// an ID the plugin made up, or a running container it names, is refused.
// Every removal is tried; the errors are returned together.
func (m *Manager) removeContainers(ctx context.Context, plan *imagegcv1.PlanContainerGCResponse, containers []*runtimeapi.Container, sandboxes []*runtimeapi.PodSandbox) error {
	byID := map[string]*runtimeapi.Container{}
	for _, c := range containers {
		byID[c.GetId()] = c
	}
	sandboxByID := map[string]*runtimeapi.PodSandbox{}
	for _, s := range sandboxes {
		sandboxByID[s.GetId()] = s
	}
	left := map[string]int{} // what the runtime still has of each pod
	for _, c := range containers {
		left[c.GetLabels()[kubelettypes.KubernetesPodUIDLabel]]++
	}
	for _, s := range sandboxes {
		left[s.GetLabels()[kubelettypes.KubernetesPodUIDLabel]]++
	}

	var errs []error
	removed := 0
	for _, id := range plan.GetRemoveContainerIds() {
		c, ok := byID[id]
		if !ok || c.GetState() == runtimeapi.ContainerState_CONTAINER_RUNNING {
			errs = append(errs, fmt.Errorf("the imagegc plugin named container %q, which is not a dead container the core listed; kept", id))
			continue
		}
		if err := m.removeContainer(ctx, c); err != nil {
			errs = append(errs, err)
			continue
		}
		removed++
		left[c.GetLabels()[kubelettypes.KubernetesPodUIDLabel]]--
	}
	removedSandboxes := 0
	for _, id := range plan.GetRemoveSandboxIds() {
		s, ok := sandboxByID[id]
		if !ok || s.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			errs = append(errs, fmt.Errorf("the imagegc plugin named sandbox %q, which is not a sandbox the core listed as not ready; kept", id))
			continue
		}
		if err := m.removeSandbox(ctx, id); err != nil {
			errs = append(errs, err)
			continue
		}
		removedSandboxes++
		left[s.GetLabels()[kubelettypes.KubernetesPodUIDLabel]]--
	}
	if removed > 0 || removedSandboxes > 0 {
		m.log.Info("container garbage collection", "containers_removed", removed, "sandboxes_removed", removedSandboxes)
	}
	errs = append(errs, m.removePodLogDirs(left), m.removeDanglingLogLinks())
	return errors.Join(errs...)
}

// removeContainer removes a dead container and its log file; for a deleted
// pod, the container's whole log directory (every instance's log).
func (m *Manager) removeContainer(ctx context.Context, c *runtimeapi.Container) error {
	var logPath string
	if st, err := m.opts.Runtime.ContainerStatus(ctx, c.GetId(), false); err == nil {
		logPath = st.GetStatus().GetLogPath()
	}
	if err := m.opts.Runtime.RemoveContainer(ctx, c.GetId()); err != nil {
		return fmt.Errorf("removing container %s: %w", c.GetId(), err)
	}
	uid := types.UID(c.GetLabels()[kubelettypes.KubernetesPodUIDLabel])
	return m.removeContainerLogs(logPath, m.opts.Pods.PodDeleted(uid))
}

// removeSandbox stops a sandbox (releasing its network, as upstream does
// before removal) and removes it.
func (m *Manager) removeSandbox(ctx context.Context, id string) error {
	if err := m.opts.Runtime.StopPodSandbox(ctx, id); err != nil {
		return fmt.Errorf("stopping sandbox %s before removing it: %w", id, err)
	}
	if err := m.opts.Runtime.RemovePodSandbox(ctx, id); err != nil {
		return fmt.Errorf("removing sandbox %s: %w", id, err)
	}
	return nil
}
