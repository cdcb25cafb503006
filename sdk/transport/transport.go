// Package transport is how the microlet core and its plugins find each other:
// the go-plugin handshake and the one plugin set every plugin binary serves.
// Both sides import it, so the two can never disagree.
package transport

import (
	"context"
	"os/exec"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
)

// ProtocolVersion is the go-plugin application protocol generation. It
// changes only if the way plugins are launched and dispensed changes; API
// changes of a kind are negotiated through GetIdentity.api_versions instead.
const ProtocolVersion = 1

// Handshake is shared by the core and every plugin. The cookie only stops a
// user from running a plugin binary by hand; it is not a security feature.
var Handshake = plugin.HandshakeConfig{
	ProtocolVersion:  ProtocolVersion,
	MagicCookieKey:   "MICROLET_PLUGIN_MAGIC_COOKIE",
	MagicCookieValue: "6f3c1d8e0b9a4f27a5d2c8e1b7f04a93d6e25c18b0a7f3e94c2d61b8a5f07e3c",
}

// PluginName is the single entry of the plugin set. Every plugin binary
// serves microlet.base.v1.PluginService and its kind's service on it.
const PluginName = "microlet"

// Environment variables the core sets for every plugin process.
const (
	// EnvLogLevel is the level the core logs at, so plugins do not ship
	// lines the core would drop.
	EnvLogLevel = "MICROLET_PLUGIN_LOG_LEVEL"
	// EnvKind and EnvName say which config block launched the process.
	EnvKind = "MICROLET_PLUGIN_KIND"
	EnvName = "MICROLET_PLUGIN_NAME"
)

// MaxMessageBytes bounds every message either way: big enough for any
// single message microlet sends (lists stream), small enough that a broken
// peer fails loudly instead of exhausting memory.
const MaxMessageBytes = 64 << 20

// ServerOptions are the options of the gRPC servers at either end: the
// plugin's, and the host service the core serves each plugin over the
// broker. Messages are bounded by MaxMessageBytes, and gRPC reads the
// connection through a small buffer (see DialOptions).
func ServerOptions() []grpc.ServerOption {
	return []grpc.ServerOption{
		grpc.MaxRecvMsgSize(MaxMessageBytes),
		grpc.MaxSendMsgSize(MaxMessageBytes),
		grpc.ReadBufferSize(readBufferBytes),
	}
}

// DialOptions are the options of the gRPC clients at either end: the
// core's of its plugin, and the plugin's of the core's host service.
// Messages are bounded by MaxMessageBytes, and gRPC reads the connection
// through a buffer of readBufferBytes.
func DialOptions() []grpc.DialOption {
	return []grpc.DialOption{
		grpc.WithDefaultCallOptions(
			grpc.MaxCallRecvMsgSize(MaxMessageBytes),
			grpc.MaxCallSendMsgSize(MaxMessageBytes)),
		grpc.WithReadBufferSize(readBufferBytes),
	}
}

// readBufferBytes is gRPC's read buffer on every connection between the
// core and a plugin. Unbuffered, each HTTP/2 frame costs two reads of the
// socket (its header, then its payload), six for a unary answer; a page
// holds a small call's frames in one read, and a bigger frame is read
// past the buffer into the message. gRPC's default, 32 KiB, would cost
// that much live at each end of each connection, 12 of them in a core
// with six plugins (docs/performance.md, Memory).
const readBufferBytes = 4096

// Conn is what the core gets when it dispenses a plugin.
type Conn struct {
	// Conn is the gRPC connection to the plugin process.
	Conn *grpc.ClientConn
	// Broker serves the core's HostService to the plugin.
	Broker *plugin.GRPCBroker
	// Done is closed when the plugin process exits.
	Done <-chan struct{}
}

// GRPCPlugin implements plugin.GRPCPlugin for both sides: the plugin sets
// Register; the core leaves it nil and receives a *Conn.
type GRPCPlugin struct {
	plugin.NetRPCUnsupportedPlugin
	// Register adds the plugin's services to its gRPC server.
	Register func(broker *plugin.GRPCBroker, server *grpc.Server) error
}

// GRPCServer runs in the plugin process.
func (p *GRPCPlugin) GRPCServer(broker *plugin.GRPCBroker, server *grpc.Server) error {
	return p.Register(broker, server)
}

// GRPCClient runs in the core. go-plugin cancels ctx when the process exits.
func (p *GRPCPlugin) GRPCClient(ctx context.Context, broker *plugin.GRPCBroker, conn *grpc.ClientConn) (any, error) {
	return &Conn{Conn: conn, Broker: broker, Done: ctx.Done()}, nil
}

// PluginSet is the versioned plugin set for go-plugin's ClientConfig and
// ServeConfig.
func PluginSet(p *GRPCPlugin) map[int]plugin.PluginSet {
	return map[int]plugin.PluginSet{ProtocolVersion: {PluginName: p}}
}

// ClientConfig is how a plugin binary is launched: gRPC only, its socket
// in socketDir, none of the launcher's environment (cmd.Env is all the
// plugin gets, besides go-plugin's own variables), and messages bounded by
// MaxMessageBytes both ways. The core adds its runner and start timeout;
// sdktest uses it as it is.
//
// go-plugin tells a plugin its socket directory from
// UnixSocketConfig.TempDir only when a RunnerFunc starts it; a plugin
// started from cmd learns it from the environment, without which it
// would use /tmp and leave its socket there when killed. ClientConfig sets
// both.
//
// The connections are plain gRPC on unix sockets. Who may talk to a plugin
// is settled by the socket's directory, which only the launcher's user may
// enter (the core refuses any other: pluginhost.Options.SocketDir), as for
// the kubelet's own plugin sockets (device plugins, CSI, the CRI) and
// Nomad's plugins. Mutual TLS on top kept out only processes of that user,
// which can read the core's memory anyway, and cost every plugin process
// its TLS state and code (docs/performance.md).
func ClientConfig(cmd *exec.Cmd, socketDir string, logger hclog.Logger) *plugin.ClientConfig {
	if cmd != nil {
		cmd.Env = append(cmd.Env, plugin.EnvUnixSocketDir+"="+socketDir)
	}
	return &plugin.ClientConfig{
		HandshakeConfig:  Handshake,
		VersionedPlugins: PluginSet(&GRPCPlugin{}),
		Cmd:              cmd,
		AllowedProtocols: []plugin.Protocol{plugin.ProtocolGRPC},
		SkipHostEnv:      true,
		UnixSocketConfig: &plugin.UnixSocketConfig{TempDir: socketDir},
		GRPCDialOptions:  DialOptions(),
		Logger:           logger,
	}
}
