package cri

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Version asks the runtime for its name and versions.
func (c *Client) Version(ctx context.Context) (*runtimeapi.VersionResponse, error) {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	resp, err := c.runtime.Version(ctx, &runtimeapi.VersionRequest{Version: kubeAPIVersion})
	if err != nil {
		return nil, c.wrap("Version", "", err)
	}
	return resp, nil
}

// Status returns the runtime's conditions (RuntimeReady, NetworkReady);
// verbose adds the runtime's info map.
func (c *Client) Status(ctx context.Context, verbose bool) (*runtimeapi.StatusResponse, error) {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	resp, err := c.runtime.Status(ctx, &runtimeapi.StatusRequest{Verbose: verbose})
	if err != nil {
		return nil, c.wrap("Status", "", err)
	}
	return resp, nil
}

// RuntimeConfig returns the runtime's configuration the node must match,
// such as its cgroup driver. Runtimes older than CRI 1.28 (containerd 1.6)
// answer Unimplemented.
func (c *Client) RuntimeConfig(ctx context.Context) (*runtimeapi.RuntimeConfigResponse, error) {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	resp, err := c.runtime.RuntimeConfig(ctx, &runtimeapi.RuntimeConfigRequest{})
	if err != nil {
		return nil, c.wrap("RuntimeConfig", "", err)
	}
	return resp, nil
}

// UpdateRuntimeConfig hands the runtime settings it needs from the node,
// such as the pod CIDR.
func (c *Client) UpdateRuntimeConfig(ctx context.Context, config *runtimeapi.RuntimeConfig) error {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	_, err := c.runtime.UpdateRuntimeConfig(ctx, &runtimeapi.UpdateRuntimeConfigRequest{RuntimeConfig: config})
	return c.wrap("UpdateRuntimeConfig", "", err)
}
