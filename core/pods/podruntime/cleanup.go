package podruntime

import (
	"context"
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubelettypes "k8s.io/kubelet/pkg/types"
)

// CleanupPod removes what a terminated pod left on the node: it unmounts
// and removes the pod's directory (volumes, termination message files, the
// hosts file) and its /var/log/containers symlinks, and forgets its
// backoffs. It refuses while the pod still has a ready sandbox or a running
// container: kill the pod first. The pod's logs under PodLogsDir stay, for
// the container garbage collector to remove with the dead containers, as
// upstream.
func (m *Manager) CleanupPod(ctx context.Context, uid types.UID) error {
	m.dns.forget(uid)
	selector := map[string]string{kubelettypes.KubernetesPodUIDLabel: string(uid)}
	sandboxes, err := m.cri.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{
		LabelSelector: selector,
		State:         &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY},
	})
	if err != nil {
		return fmt.Errorf("podruntime: cleaning up pod %s: %w", uid, err)
	}
	containers, err := m.cri.ListContainers(ctx, &runtimeapi.ContainerFilter{
		LabelSelector: selector,
		State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	})
	if err != nil {
		return fmt.Errorf("podruntime: cleaning up pod %s: %w", uid, err)
	}
	if len(sandboxes) > 0 || len(containers) > 0 {
		return fmt.Errorf("podruntime: pod %s still has %d ready sandboxes and %d running containers; kill it before cleaning it up",
			uid, len(sandboxes), len(containers))
	}
	err = errors.Join(m.volumes.tearDown(uid), m.unlinkPodLogs(uid))
	m.crashLoop.forgetPod(uid)
	m.images.backoff.forgetPod(uid)
	if err != nil {
		return fmt.Errorf("podruntime: cleaning up pod %s: %w", uid, err)
	}
	return nil
}
