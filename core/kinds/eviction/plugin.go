package eviction

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/microlet/microlet/core/pluginhost"
	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
)

// PluginKind is the plugin kind the manager calls.
const PluginKind = "eviction"

// Optional capabilities of an eviction plugin (sdk.CapabilityEvictionAdmit,
// sdk.CapabilityEvictionReservation).
const (
	capabilityAdmit       = "eviction.admit"
	capabilityReservation = "eviction.reservation"
)

// errNotConfigured means the config has no eviction plugin block.
var errNotConfigured = errors.New("no eviction plugin is configured")

// Plugin is how the manager reaches the eviction plugin.
type Plugin interface {
	// Call runs fn with a client of the serving plugin and the
	// capabilities it declared. Its error wraps pluginhost.ErrUnavailable
	// when no plugin is configured or serves.
	Call(ctx context.Context, fn func(ctx context.Context, client evictionv1.EvictionServiceClient, capabilities []string) error) error
	// Name is the configured plugin's name; "" when none is configured.
	Name() string
}

// HostPlugin reaches the eviction plugin through the plugin host, looked up
// on every call so that a plugin configured or swapped later is used at
// once.
func HostPlugin(host *pluginhost.Host) Plugin { return hostPlugin{host} }

type hostPlugin struct{ host *pluginhost.Host }

func (h hostPlugin) Call(ctx context.Context, fn func(context.Context, evictionv1.EvictionServiceClient, []string) error) error {
	slot := h.host.Plugin(PluginKind)
	if slot == nil {
		return fmt.Errorf("%w: %w", errNotConfigured, pluginhost.ErrUnavailable)
	}
	lease, err := slot.Acquire(ctx)
	if err != nil {
		return err
	}
	capabilities := lease.Capabilities
	lease.Release()
	_, err = pluginhost.Call(ctx, slot, func(ctx context.Context, conn *grpc.ClientConn) (struct{}, error) {
		return struct{}{}, fn(ctx, evictionv1.NewEvictionServiceClient(conn), capabilities)
	})
	return err
}

func (h hostPlugin) Name() string {
	if slot := h.host.Plugin(PluginKind); slot != nil {
		return slot.Name()
	}
	return ""
}

// callPlugin calls the plugin and sorts its errors: every "ask again later"
// (no process serving, UNAVAILABLE, RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED,
// FAILED_PRECONDITION: not configured yet) wraps pluginhost.ErrUnavailable;
// anything else is the plugin's answer.
func callPlugin[T any](ctx context.Context, p Plugin, what string, fn func(context.Context, evictionv1.EvictionServiceClient, []string) (T, error)) (T, error) {
	var out T
	err := p.Call(ctx, func(ctx context.Context, c evictionv1.EvictionServiceClient, capabilities []string) error {
		var err error
		out, err = fn(ctx, c, capabilities)
		return err
	})
	switch {
	case err == nil, errors.Is(err, pluginhost.ErrUnavailable):
		return out, err
	case ctx.Err() != nil:
		return out, ctx.Err()
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.ResourceExhausted, codes.DeadlineExceeded, codes.FailedPrecondition:
		return out, fmt.Errorf("eviction plugin %s: %w: %w", what, pluginhost.ErrUnavailable, err)
	}
	return out, fmt.Errorf("eviction plugin %s: %w", what, err)
}

// errNoCapability: the plugin does not implement the optional call.
var errNoCapability = errors.New("the eviction plugin does not implement this call")

// callOptional calls an optional RPC when the plugin declares capability;
// otherwise, or when it answers UNIMPLEMENTED, the error wraps
// errNoCapability.
func callOptional[T any](ctx context.Context, p Plugin, what, capability string, fn func(context.Context, evictionv1.EvictionServiceClient) (T, error)) (T, error) {
	out, err := callPlugin(ctx, p, what, func(ctx context.Context, c evictionv1.EvictionServiceClient, capabilities []string) (T, error) {
		var zero T
		if !slices.Contains(capabilities, capability) {
			return zero, errNoCapability
		}
		return fn(ctx, c)
	})
	if errors.Is(err, errNoCapability) || status.Code(err) == codes.Unimplemented {
		return out, fmt.Errorf("%s: %w", what, errNoCapability)
	}
	return out, err
}
