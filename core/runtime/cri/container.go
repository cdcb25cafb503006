package cri

import (
	"context"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CreateContainer creates a container in a sandbox and returns its ID.
func (c *Client) CreateContainer(ctx context.Context, sandboxID string, config *runtimeapi.ContainerConfig, sandboxConfig *runtimeapi.PodSandboxConfig) (string, error) {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	resp, err := c.runtime.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: sandboxID, Config: config, SandboxConfig: sandboxConfig,
	})
	if err != nil {
		name := ""
		if m := config.GetMetadata(); m != nil {
			name = m.Name
		}
		return "", c.wrap("CreateContainer", sandboxID+"/"+name, err)
	}
	return resp.ContainerId, nil
}

// StartContainer starts a created container.
func (c *Client) StartContainer(ctx context.Context, containerID string) error {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	_, err := c.runtime.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: containerID})
	return c.wrap("StartContainer", containerID, err)
}

// StopContainer stops a container, killing it after gracePeriod seconds.
// The call's deadline is the grace period plus the request timeout, as in
// the kubelet, to leave the runtime time to kill and clean up.
func (c *Client) StopContainer(ctx context.Context, containerID string, gracePeriod int64) error {
	ctx, cancel := c.callContext(ctx, time.Duration(gracePeriod)*time.Second)
	defer cancel()
	_, err := c.runtime.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: containerID, Timeout: gracePeriod})
	return c.wrap("StopContainer", containerID, err)
}

// RemoveContainer removes a container, stopping it first if needed.
func (c *Client) RemoveContainer(ctx context.Context, containerID string) error {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	_, err := c.runtime.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: containerID})
	return c.wrap("RemoveContainer", containerID, err)
}

// ListContainers lists the containers that match filter (nil: all).
func (c *Client) ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	resp, err := c.runtime.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: filter})
	if err != nil {
		return nil, c.wrap("ListContainers", "", err)
	}
	return resp.Containers, nil
}

// ContainerStatus returns a container's status; verbose adds the runtime's
// info map.
func (c *Client) ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error) {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	resp, err := c.runtime.ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: containerID, Verbose: verbose})
	if err != nil {
		return nil, c.wrap("ContainerStatus", containerID, err)
	}
	return resp, nil
}

// UpdateContainerResources changes a running container's resources.
func (c *Client) UpdateContainerResources(ctx context.Context, containerID string, resources *runtimeapi.ContainerResources) error {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	_, err := c.runtime.UpdateContainerResources(ctx, &runtimeapi.UpdateContainerResourcesRequest{
		ContainerId: containerID, Linux: resources.GetLinux(), Windows: resources.GetWindows(),
	})
	return c.wrap("UpdateContainerResources", containerID, err)
}

// ReopenContainerLog makes the runtime reopen a container's log file, after
// log rotation moved it.
func (c *Client) ReopenContainerLog(ctx context.Context, containerID string) error {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	_, err := c.runtime.ReopenContainerLog(ctx, &runtimeapi.ReopenContainerLogRequest{ContainerId: containerID})
	return c.wrap("ReopenContainerLog", containerID, err)
}
