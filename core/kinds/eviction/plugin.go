package eviction

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/microlet/microlet/core/pluginhost"
	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
)

// Plugin is how the manager reaches the eviction plugin. Its errors wrap
// pluginhost.ErrUnavailable when no plugin serves, and
// pluginhost.ErrNotConfigured as well when none is configured.
type Plugin interface {
	pluginhost.Caller[evictionv1.EvictionServiceClient]
	// Name is the configured plugin's name; "" when none is configured.
	Name() string
}

// evictionConn is one eviction plugin process as a call sees it.
type evictionConn = pluginhost.Conn[evictionv1.EvictionServiceClient]

// HostPlugin reaches the eviction plugin through the plugin host, looked up
// on every call so that a plugin configured or swapped later is used at
// once.
func HostPlugin(host *pluginhost.Host) Plugin {
	return pluginhost.Client[evictionv1.EvictionServiceClient]{Slot: host.Kind(pluginhost.Eviction), New: evictionv1.NewEvictionServiceClient}
}

// errNoCapability: the plugin does not implement the optional call.
var errNoCapability = errors.New("the eviction plugin does not implement this call")

// callOptional calls an optional RPC when the plugin process it reaches
// declares capability; otherwise, or when it answers UNIMPLEMENTED, the
// error wraps errNoCapability.
func callOptional[T any](ctx context.Context, p Plugin, what, capability string, fn func(context.Context, evictionv1.EvictionServiceClient) (T, error)) (T, error) {
	out, err := pluginhost.Ask(ctx, p, "eviction plugin "+what, func(ctx context.Context, c evictionConn) (T, error) {
		var zero T
		if !slices.Contains(c.Capabilities, capability) {
			return zero, errNoCapability
		}
		return fn(ctx, c.Client)
	})
	if errors.Is(err, errNoCapability) || status.Code(err) == codes.Unimplemented {
		return out, fmt.Errorf("%s: %w", what, errNoCapability)
	}
	return out, err
}
