package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// RunPodSandbox creates and starts a pod sandbox (the runtime sets up its
// network here) and returns its ID. It gets twice the request timeout, as in
// the kubelet: CNI setup can be slow.
func (c *Client) RunPodSandbox(ctx context.Context, config *runtimeapi.PodSandboxConfig, runtimeHandler string) (string, error) {
	ctx, cancel := c.callContext(ctx, c.cfg.RequestTimeout)
	defer cancel()
	resp, err := c.runtime.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: config, RuntimeHandler: runtimeHandler})
	if err != nil {
		return "", c.wrap("RunPodSandbox", sandboxName(config), err)
	}
	return resp.PodSandboxId, nil
}

// StopPodSandbox stops a sandbox's containers and tears down its network.
func (c *Client) StopPodSandbox(ctx context.Context, sandboxID string) error {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	_, err := c.runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: sandboxID})
	return c.wrap("StopPodSandbox", sandboxID, err)
}

// RemovePodSandbox removes a stopped sandbox and its containers.
func (c *Client) RemovePodSandbox(ctx context.Context, sandboxID string) error {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	_, err := c.runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: sandboxID})
	return c.wrap("RemovePodSandbox", sandboxID, err)
}

// PodSandboxStatus returns a sandbox's status; verbose adds the runtime's
// info map.
func (c *Client) PodSandboxStatus(ctx context.Context, sandboxID string, verbose bool) (*runtimeapi.PodSandboxStatusResponse, error) {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	resp, err := c.runtime.PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: sandboxID, Verbose: verbose})
	if err != nil {
		return nil, c.wrap("PodSandboxStatus", sandboxID, err)
	}
	return resp, nil
}

// ListPodSandbox lists the sandboxes that match filter (nil: all).
func (c *Client) ListPodSandbox(ctx context.Context, filter *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	resp, err := c.runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: filter})
	if err != nil {
		return nil, c.wrap("ListPodSandbox", "", err)
	}
	return resp.Items, nil
}

// sandboxName names a sandbox that has no ID yet by its pod.
func sandboxName(config *runtimeapi.PodSandboxConfig) string {
	if m := config.GetMetadata(); m != nil {
		return m.Namespace + "/" + m.Name
	}
	return ""
}
