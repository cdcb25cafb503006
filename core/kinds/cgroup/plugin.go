package cgroup

import (
	"context"
	"errors"
	"fmt"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/microlet/microlet/core/pluginhost"
	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
)

// PluginKind is the plugin kind the manager calls.
const PluginKind = "cgroup"

// ErrNoPlugin means no cgroup plugin is configured: pods run without a
// cgroup of their own or resource settings, and every pod is admitted.
var ErrNoPlugin = errors.New("no cgroup plugin is configured")

// Plugin is how the manager reaches the cgroup plugin.
type Plugin interface {
	// Call runs fn with a client of the serving plugin process. It returns
	// ErrNoPlugin when no cgroup plugin is configured, and an error wrapping
	// pluginhost.ErrUnavailable when one is configured but does not serve.
	Call(ctx context.Context, fn func(ctx context.Context, client cgroupv1.CgroupServiceClient) error) error
}

// HostPlugin reaches the cgroup plugin through the plugin host; the slot
// is looked up on every call, so a plugin configured by a reload is used
// at once.
func HostPlugin(host *pluginhost.Host) Plugin { return hostPlugin{host} }

type hostPlugin struct{ host *pluginhost.Host }

func (h hostPlugin) Call(ctx context.Context, fn func(context.Context, cgroupv1.CgroupServiceClient) error) error {
	slot := h.host.Plugin(PluginKind)
	if slot == nil {
		return ErrNoPlugin
	}
	_, err := pluginhost.Call(ctx, slot, func(ctx context.Context, conn *grpc.ClientConn) (struct{}, error) {
		return struct{}{}, fn(ctx, cgroupv1.NewCgroupServiceClient(conn))
	})
	return err
}

// callPlugin calls the plugin and sorts its errors: ErrNoPlugin as is;
// every error that says "ask again later" (no serving process, a lost
// process, UNAVAILABLE, RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED from the
// plugin) wrapping pluginhost.ErrUnavailable; the caller's own
// cancellation as ctx.Err(); anything else as the plugin's answer.
func callPlugin[T any](ctx context.Context, p Plugin, what string, fn func(context.Context, cgroupv1.CgroupServiceClient) (T, error)) (T, error) {
	var out T
	if p == nil {
		return out, ErrNoPlugin
	}
	err := p.Call(ctx, func(ctx context.Context, c cgroupv1.CgroupServiceClient) error {
		var err error
		out, err = fn(ctx, c)
		return err
	})
	switch {
	case err == nil, errors.Is(err, ErrNoPlugin):
		return out, err
	case ctx.Err() != nil:
		return out, ctx.Err()
	case errors.Is(err, pluginhost.ErrUnavailable):
		return out, fmt.Errorf("%s: %w", what, err)
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.ResourceExhausted, codes.DeadlineExceeded:
		return out, fmt.Errorf("%s: %w: %w", what, pluginhost.ErrUnavailable, err)
	}
	return out, fmt.Errorf("%s: %w", what, err)
}

// isUnavailable reports errors that mean "ask the plugin again later".
func isUnavailable(err error) bool { return errors.Is(err, pluginhost.ErrUnavailable) }
