package podruntime

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	crierrors "k8s.io/cri-api/pkg/errors"
	kubelettypes "k8s.io/kubelet/pkg/types"

	"github.com/microlet/microlet/core/runtime/container"
)

// ListPods returns every pod on the runtime, dead ones included, grouped by
// the pod UID label. Sandboxes and containers without the label were not
// made by microlet (or the kubelet) and are left out.
func (m *Manager) ListPods(ctx context.Context) ([]*container.Pod, error) {
	sandboxes, err := m.cri.ListPodSandbox(ctx, nil)
	if err != nil {
		return nil, err
	}
	containers, err := m.cri.ListContainers(ctx, nil)
	if err != nil {
		return nil, err
	}
	pods := map[types.UID]*container.Pod{}
	pod := func(labels map[string]string) *container.Pod {
		uid := types.UID(labels[kubelettypes.KubernetesPodUIDLabel])
		if uid == "" {
			return nil
		}
		p, ok := pods[uid]
		if !ok {
			p = &container.Pod{UID: uid, Name: labels[kubelettypes.KubernetesPodNameLabel], Namespace: labels[kubelettypes.KubernetesPodNamespaceLabel]}
			pods[uid] = p
		}
		return p
	}
	for _, s := range sandboxes {
		if p := pod(s.Labels); p != nil {
			p.Sandboxes = append(p.Sandboxes, &container.Sandbox{ID: s.Id, State: sandboxState(s.State), CreatedAt: time.Unix(0, s.CreatedAt)})
		}
	}
	for _, c := range containers {
		p := pod(c.Labels)
		if p == nil {
			continue
		}
		a, _ := containerFromAnnotations(c.Annotations) // an unparsable hash reads as 0: a changed container
		p.Containers = append(p.Containers, &container.Container{
			ID: c.Id, Name: c.GetMetadata().GetName(), SandboxID: c.PodSandboxId,
			State: container.StateFromCRI(c.State), CreatedAt: time.Unix(0, c.CreatedAt), Hash: a.Hash,
		})
	}
	out := make([]*container.Pod, 0, len(pods))
	for _, p := range pods {
		slices.SortFunc(p.Sandboxes, func(a, b *container.Sandbox) int { return b.CreatedAt.Compare(a.CreatedAt) })
		slices.SortFunc(p.Containers, func(a, b *container.Container) int { return b.CreatedAt.Compare(a.CreatedAt) })
		out = append(out, p)
	}
	slices.SortFunc(out, func(a, b *container.Pod) int { return cmp.Compare(a.UID, b.UID) })
	return out, nil
}

// GetPodStatus reads everything the runtime knows of a pod: its sandboxes
// and every container instance, newest first, with termination messages of
// exited containers. A sandbox or container removed between listing and
// reading is left out, as upstream.
func (m *Manager) GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error) {
	listedAt := time.Now()
	selector := map[string]string{kubelettypes.KubernetesPodUIDLabel: string(uid)}
	sandboxes, err := m.cri.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	slices.SortFunc(sandboxes, func(a, b *runtimeapi.PodSandbox) int { return cmp.Compare(b.CreatedAt, a.CreatedAt) })
	containers, err := m.cri.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: selector})
	if err != nil {
		return nil, err
	}
	listed := &container.Pod{UID: uid, Name: name, Namespace: namespace}
	for _, s := range sandboxes {
		listed.Sandboxes = append(listed.Sandboxes, &container.Sandbox{ID: s.Id})
	}
	for _, c := range containers {
		listed.Containers = append(listed.Containers, &container.Container{ID: c.Id, SandboxID: c.PodSandboxId})
	}
	return m.ListedPodStatus(ctx, listed, listedAt)
}

// ListedPodStatus reads the status of the sandboxes and containers a
// listing (ListPods, begun at listedAt) holds of a pod: GetPodStatus
// without the pod's two filtered lists, which containerd answers by going
// through every sandbox and container on the node, so that a relist that
// reads each of N starting pods cost O(N²). What was made after the listing
// is not in the status; it is dated listedAt, so that nobody waiting for a
// status newer than their own later action takes it for one.
func (m *Manager) ListedPodStatus(ctx context.Context, listed *container.Pod, listedAt time.Time) (*container.PodStatus, error) {
	status := &container.PodStatus{UID: listed.UID, Name: listed.Name, Namespace: listed.Namespace, Timestamp: listedAt}
	for _, s := range listed.Sandboxes {
		resp, err := m.cri.PodSandboxStatus(ctx, s.ID, false)
		if crierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if resp.GetStatus() == nil {
			return nil, fmt.Errorf("the runtime returned no status for sandbox %s", s.ID)
		}
		status.Sandboxes = append(status.Sandboxes, sandboxStatus(resp.GetStatus()))
	}
	for _, c := range listed.Containers {
		resp, err := m.cri.ContainerStatus(ctx, c.ID, false)
		if crierrors.IsNotFound(err) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if resp.GetStatus() == nil {
			return nil, fmt.Errorf("the runtime returned no status for container %s", c.ID)
		}
		status.Containers = append(status.Containers, m.containerStatus(c.SandboxID, resp.GetStatus()))
	}
	slices.SortStableFunc(status.Containers, func(a, b *container.ContainerStatus) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return status, nil
}

// GeneratePodStatus turns a container event, which carries the pod's
// sandbox status and the statuses of the sandbox's containers, into the
// pod's status as GetPodStatus reads it (upstream's GeneratePodStatus), for
// an evented PLEG. Containers of older sandboxes are not in the event.
func (m *Manager) GeneratePodStatus(event *runtimeapi.ContainerEventResponse) (*container.PodStatus, error) {
	sandbox := event.GetPodSandboxStatus()
	if sandbox == nil {
		return nil, fmt.Errorf("the event of container %s carries no sandbox status", event.GetContainerId())
	}
	meta := sandbox.GetMetadata()
	status := &container.PodStatus{
		UID:       types.UID(meta.GetUid()),
		Name:      meta.GetName(),
		Namespace: meta.GetNamespace(),
		Sandboxes: []*container.SandboxStatus{sandboxStatus(sandbox)},
		Timestamp: time.Unix(0, event.GetCreatedAt()),
	}
	for _, c := range event.GetContainersStatuses() {
		status.Containers = append(status.Containers, m.containerStatus(sandbox.Id, c))
	}
	slices.SortStableFunc(status.Containers, func(a, b *container.ContainerStatus) int { return b.CreatedAt.Compare(a.CreatedAt) })
	return status, nil
}

// sandboxStatus converts a sandbox's CRI status. Only a ready sandbox has
// addresses.
func sandboxStatus(s *runtimeapi.PodSandboxStatus) *container.SandboxStatus {
	out := &container.SandboxStatus{
		ID:          s.Id,
		State:       sandboxState(s.State),
		CreatedAt:   time.Unix(0, s.CreatedAt),
		Attempt:     s.GetMetadata().GetAttempt(),
		HostNetwork: s.GetLinux().GetNamespaces().GetOptions().GetNetwork() == runtimeapi.NamespaceMode_NODE,
	}
	if out.State == container.SandboxReady {
		out.IPs = sandboxIPs(s)
	}
	return out
}

// sandboxIPs are a sandbox's addresses, primary first; none when one does
// not parse, as upstream's determinePodSandboxIPs.
func sandboxIPs(s *runtimeapi.PodSandboxStatus) []string {
	network := s.GetNetwork()
	if network == nil || network.Ip == "" {
		return nil
	}
	ips := []string{network.Ip}
	for _, ip := range network.AdditionalIps {
		ips = append(ips, ip.GetIp())
	}
	for _, ip := range ips {
		if net.ParseIP(ip) == nil {
			return nil
		}
	}
	return ips
}

// containerStatus converts a container's CRI status, reading the
// termination message of an exited container.
func (m *Manager) containerStatus(sandboxID string, s *runtimeapi.ContainerStatus) *container.ContainerStatus {
	l := containerFromLabels(s.Labels)
	a, err := containerFromAnnotations(s.Annotations)
	if err != nil {
		m.log.Warn("container annotations do not parse", "container_id", s.Id, "error", err)
	}
	out := &container.ContainerStatus{
		ID:           s.Id,
		Name:         l.ContainerName,
		SandboxID:    sandboxID,
		State:        container.StateFromCRI(s.State),
		CreatedAt:    time.Unix(0, s.CreatedAt),
		Image:        s.GetImage().GetImage(),
		ImageRef:     s.ImageRef,
		ImageID:      cmp.Or(s.ImageId, s.ImageRef),
		Hash:         a.Hash,
		RestartCount: a.RestartCount,
		Attempt:      s.GetMetadata().GetAttempt(),
	}
	if s.GetImage().GetUserSpecifiedImage() != "" {
		out.Image = s.GetImage().GetUserSpecifiedImage()
	}
	if out.Name == "" {
		out.Name = s.GetMetadata().GetName()
	}
	if s.State != runtimeapi.ContainerState_CONTAINER_CREATED {
		out.StartedAt = unixNanoOrZero(s.StartedAt)
	}
	if s.State == runtimeapi.ContainerState_CONTAINER_EXITED {
		out.FinishedAt = unixNanoOrZero(s.FinishedAt)
		out.ExitCode = s.ExitCode
		out.Reason = s.Reason
		out.Message = withTerminationMessage(s, a)
	}
	return out
}

func unixNanoOrZero(ns int64) time.Time {
	if ns == 0 {
		return time.Time{}
	}
	return time.Unix(0, ns)
}

func sandboxState(s runtimeapi.PodSandboxState) container.SandboxState {
	if s == runtimeapi.PodSandboxState_SANDBOX_READY {
		return container.SandboxReady
	}
	return container.SandboxNotReady
}

// runtimePodIPs are the addresses of a running pod, for preStop HTTP hooks:
// the node's for a pod on the host network, else its newest ready
// sandbox's.
func (m *Manager) runtimePodIPs(ctx context.Context, hostNetwork bool, runtimePod *container.Pod) []string {
	if hostNetwork {
		return ipStrings(m.nodeIPs)
	}
	for _, s := range runtimePod.Sandboxes {
		if s.State != container.SandboxReady {
			continue
		}
		resp, err := m.cri.PodSandboxStatus(ctx, s.ID, false)
		if err == nil && resp.GetStatus() == nil {
			err = fmt.Errorf("the runtime returned no status for sandbox %s", s.ID)
		}
		if err != nil {
			m.log.Warn("cannot read the pod's addresses for its preStop hooks", "pod_uid", runtimePod.UID, "error", err)
			return nil
		}
		if sandboxStatus(resp.GetStatus()).HostNetwork {
			return ipStrings(m.nodeIPs)
		}
		return sandboxIPs(resp.GetStatus())
	}
	return nil
}

func ipStrings(ips []net.IP) []string {
	out := make([]string, len(ips))
	for i, ip := range ips {
		out[i] = ip.String()
	}
	return out
}
