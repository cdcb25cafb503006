package stats

import (
	"context"
	"fmt"

	"google.golang.org/grpc"

	"github.com/microlet/microlet/core/pluginhost"
)

// pluginKind is the stats plugins' kind in the plugin host.
const pluginKind = "stats"

// Source is where a Provider reaches the stats plugin.
type Source interface {
	// Call runs fn on a connection to the serving stats plugin. Its error
	// wraps pluginhost.ErrUnavailable when no plugin serves.
	Call(ctx context.Context, fn func(ctx context.Context, conn *grpc.ClientConn) error) error
}

// PluginSource is the stats plugin configured on host, found anew on each
// call, so that a plugin configured, swapped or removed later is followed.
func PluginSource(host *pluginhost.Host) Source { return pluginSource{host: host} }

type pluginSource struct{ host *pluginhost.Host }

func (s pluginSource) Call(ctx context.Context, fn func(ctx context.Context, conn *grpc.ClientConn) error) error {
	slot := s.host.Plugin(pluginKind)
	if slot == nil {
		return fmt.Errorf("%w: no stats plugin is configured", pluginhost.ErrUnavailable)
	}
	_, err := pluginhost.Call(ctx, slot, func(ctx context.Context, conn *grpc.ClientConn) (struct{}, error) {
		return struct{}{}, fn(ctx, conn)
	})
	return err
}

// ConnSource is a stats plugin reached over a connection the caller holds
// (tests and benchmarks that serve the plugin themselves).
func ConnSource(conn *grpc.ClientConn) Source { return connSource{conn: conn} }

type connSource struct{ conn *grpc.ClientConn }

func (s connSource) Call(ctx context.Context, fn func(ctx context.Context, conn *grpc.ClientConn) error) error {
	return fn(ctx, s.conn)
}
