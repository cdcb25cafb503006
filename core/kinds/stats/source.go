package stats

import (
	"context"

	"google.golang.org/grpc"

	"github.com/microlet/microlet/core/pluginhost"
	statsv1 "github.com/microlet/microlet/proto/microlet/stats/v1"
)

// Source is where a Provider reaches the stats plugin. Its errors wrap
// pluginhost.ErrUnavailable when no plugin serves.
type Source = pluginhost.Caller[statsv1.StatsServiceClient]

// HostPlugin is the stats plugin configured on host, found anew on each
// call, so that a plugin configured, swapped or removed later is followed.
func HostPlugin(host *pluginhost.Host) Source {
	return pluginhost.Client[statsv1.StatsServiceClient]{Slot: host.Kind(pluginhost.Stats), New: statsv1.NewStatsServiceClient}
}

// ConnSource is a stats plugin reached over a connection the caller holds
// (tests and benchmarks that serve the plugin themselves).
func ConnSource(conn *grpc.ClientConn) Source { return connSource{conn: conn} }

type connSource struct{ conn *grpc.ClientConn }

func (s connSource) Call(ctx context.Context, fn func(context.Context, pluginhost.Conn[statsv1.StatsServiceClient]) error) error {
	return fn(ctx, pluginhost.Conn[statsv1.StatsServiceClient]{Client: statsv1.NewStatsServiceClient(s.conn)})
}
