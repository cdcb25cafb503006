package cri

import (
	"context"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ExecSync runs cmd in a container and returns its output and exit code. A
// command that exits non-zero is not an error. With a timeout the call's
// deadline is the timeout plus the request timeout, as in the kubelet; with
// none only ctx bounds it.
func (c *Client) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (*runtimeapi.ExecSyncResponse, error) {
	cancel := func() {}
	if timeout > 0 {
		ctx, cancel = c.callContext(ctx, timeout)
	}
	defer cancel()
	resp, err := c.runtime.ExecSync(ctx, &runtimeapi.ExecSyncRequest{
		ContainerId: containerID, Cmd: cmd, Timeout: int64(timeout.Seconds()),
	})
	if err != nil {
		return nil, c.wrap("ExecSync", containerID, err)
	}
	return resp, nil
}

// Exec prepares a streaming exec and returns the URL to stream it from.
func (c *Client) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	resp, err := c.runtime.Exec(ctx, req)
	if err != nil {
		return nil, c.wrap("Exec", req.GetContainerId(), err)
	}
	return resp, nil
}

// Attach prepares a streaming attach and returns the URL to stream it from.
func (c *Client) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	resp, err := c.runtime.Attach(ctx, req)
	if err != nil {
		return nil, c.wrap("Attach", req.GetContainerId(), err)
	}
	return resp, nil
}

// PortForward prepares a port forward into a sandbox and returns the URL to
// stream it from.
func (c *Client) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	ctx, cancel := c.callContext(ctx, 0)
	defer cancel()
	resp, err := c.runtime.PortForward(ctx, req)
	if err != nil {
		return nil, c.wrap("PortForward", req.GetPodSandboxId(), err)
	}
	return resp, nil
}
