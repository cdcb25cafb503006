package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ContainerStats returns one container's resource usage.
func (c *Client) ContainerStats(ctx context.Context, containerID string) (*runtimeapi.ContainerStats, error) {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	resp, err := c.runtime.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: containerID})
	if err != nil {
		return nil, c.wrap("ContainerStats", containerID, err)
	}
	return resp.Stats, nil
}

// ListContainerStats returns the usage of the containers that match filter
// (nil: all).
func (c *Client) ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	resp, err := c.runtime.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: filter})
	if err != nil {
		return nil, c.wrap("ListContainerStats", "", err)
	}
	return resp.Stats, nil
}

// PodSandboxStats returns one sandbox's resource usage.
func (c *Client) PodSandboxStats(ctx context.Context, sandboxID string) (*runtimeapi.PodSandboxStats, error) {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	resp, err := c.runtime.PodSandboxStats(ctx, &runtimeapi.PodSandboxStatsRequest{PodSandboxId: sandboxID})
	if err != nil {
		return nil, c.wrap("PodSandboxStats", sandboxID, err)
	}
	return resp.Stats, nil
}

// ListPodSandboxStats returns the usage of the sandboxes that match filter
// (nil: all).
func (c *Client) ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	resp, err := c.runtime.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{Filter: filter})
	if err != nil {
		return nil, c.wrap("ListPodSandboxStats", "", err)
	}
	return resp.Stats, nil
}
