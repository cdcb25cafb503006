//go:build e2e

package nodee2e

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// waitRuntimeStopped waits until nothing of the pod runs on the runtime:
// no running container, no ready sandbox.
func (n *testNode) waitRuntimeStopped(uid types.UID) {
	n.t.Helper()
	n.eventually(fmt.Sprintf("nothing of pod %s runs on the runtime", uid), func() (bool, string) {
		var live []string
		for _, c := range n.runtimeContainers(uid) {
			if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
				live = append(live, "container "+c.Metadata.Name)
			}
		}
		for _, s := range n.runtimeSandboxes(uid) {
			if s.State == runtimeapi.PodSandboxState_SANDBOX_READY {
				live = append(live, "sandbox "+s.Id)
			}
		}
		return len(live) == 0, strings.Join(live, ", ")
	})
}

// runtimeContainers lists every instance of the pod's containers on the
// runtime.
func (n *testNode) runtimeContainers(uid types.UID) []*runtimeapi.Container {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), criTimeout)
	defer cancel()
	resp, err := n.cri.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
		LabelSelector: map[string]string{"io.kubernetes.pod.uid": string(uid)},
	}})
	if err != nil {
		n.t.Fatalf("ListContainers: %v", err)
	}
	return resp.Containers
}

func (n *testNode) runtimeSandboxes(uid types.UID) []*runtimeapi.PodSandbox {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), criTimeout)
	defer cancel()
	resp, err := n.cri.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{
		LabelSelector: map[string]string{"io.kubernetes.pod.uid": string(uid)},
	}})
	if err != nil {
		n.t.Fatalf("ListPodSandbox: %v", err)
	}
	return resp.Items
}

// runtimeStatus is the runtime's status of one container, by the name it
// has in the pod (its newest instance).
func (n *testNode) runtimeStatus(uid types.UID, name string) *runtimeapi.ContainerStatus {
	n.t.Helper()
	var newest *runtimeapi.Container
	for _, c := range n.runtimeContainers(uid) {
		if c.Metadata.Name == name && (newest == nil || c.CreatedAt > newest.CreatedAt) {
			newest = c
		}
	}
	if newest == nil {
		n.t.Fatalf("pod %s has no container %s on the runtime", uid, name)
	}
	st, _ := n.containerStatus(newest.Id)
	return st
}

// containerInfo is what containerd's verbose ContainerStatus adds: the
// process id and the CRI config the container was created with.
type containerInfo struct {
	PID    int                         `json:"pid"`
	Config *runtimeapi.ContainerConfig `json:"config"`
}

// containerStatus reads a container's status and containerd's verbose info.
func (n *testNode) containerStatus(id string) (*runtimeapi.ContainerStatus, containerInfo) {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), criTimeout)
	defer cancel()
	resp, err := n.cri.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		n.t.Fatalf("ContainerStatus %s: %v", id, err)
	}
	var info containerInfo
	if raw, ok := resp.Info["info"]; ok {
		if err := json.Unmarshal([]byte(raw), &info); err != nil {
			n.t.Fatalf("ContainerStatus %s: verbose info: %v", id, err)
		}
	}
	return resp.Status, info
}

// exec runs cmd in a container and returns its output and exit code.
func (n *testNode) exec(containerID string, cmd ...string) (string, int32) {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), criTimeout)
	defer cancel()
	resp, err := n.cri.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: containerID, Cmd: cmd, Timeout: 10})
	if err != nil {
		n.t.Fatalf("exec %q in %s: %v", cmd, containerID, err)
	}
	return string(resp.Stdout) + string(resp.Stderr), resp.ExitCode
}
