package bridge

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

// dialTimeout bounds connecting to a registering plugin, as upstream's
// dial (10 s, blocking).
const dialTimeout = 10 * time.Second

// endpoint is one registered upstream device plugin: the resource it
// serves, its connection and options, and what its ListAndWatch reported.
type endpoint struct {
	resource string
	socket   string
	conn     *grpc.ClientConn
	client   pluginapi.DevicePluginClient
	options  *pluginapi.DevicePluginOptions
	// stopStream ends the ListAndWatch stream.
	stopStream context.CancelFunc

	// Guarded by Plugin.mu.
	devices   []*pluginapi.Device
	reported  bool      // ListAndWatch has sent at least once
	stoppedAt time.Time // zero while the stream runs
	expiry    *time.Timer
}

// connect dials a plugin's socket and asks its options, as upstream's
// client.Connect and PluginConnected do before a registration succeeds.
func connect(ctx context.Context, resource, socket string) (*endpoint, error) {
	conn, err := grpc.NewClient("unix:"+socket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return nil, fmt.Errorf("failed to dial device plugin: %w", err)
	}
	client := pluginapi.NewDevicePluginClient(conn)
	ctx, cancel := context.WithTimeout(ctx, dialTimeout)
	defer cancel()
	options, err := client.GetDevicePluginOptions(ctx, &pluginapi.Empty{})
	if err != nil {
		conn.Close()
		return nil, fmt.Errorf("failed to get device plugin options from %s: %w", socket, err)
	}
	return &endpoint{resource: resource, socket: socket, conn: conn, client: client, options: options}, nil
}

// stopped says whether the plugin's stream has ended.
func (e *endpoint) stopped() bool { return !e.stoppedAt.IsZero() }

// close ends the stream and the connection, and the pending expiry.
func (e *endpoint) close() {
	if e.stopStream != nil {
		e.stopStream()
	}
	if e.expiry != nil {
		e.expiry.Stop()
	}
	_ = e.conn.Close()
}

// unhealthy are devices as a stopped plugin's: all unhealthy.
func unhealthy(devices []*pluginapi.Device) []*pluginapi.Device {
	out := make([]*pluginapi.Device, len(devices))
	for i, d := range devices {
		out[i] = &pluginapi.Device{ID: d.GetID(), Health: pluginapi.Unhealthy, Topology: d.GetTopology()}
	}
	return out
}
