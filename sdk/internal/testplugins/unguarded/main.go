// Command unguarded is the control for noisy: a go-plugin server with
// microlet's handshake but without the SDK, whose init prints to standard
// output. Its launch must fail, which shows that the noisy test would catch
// a broken stdout guard.
package main

import (
	"fmt"

	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"

	"github.com/microlet/microlet/sdk/transport"
)

func init() { fmt.Println("unguarded: printed in init") }

func main() {
	plugin.Serve(&plugin.ServeConfig{
		HandshakeConfig: transport.Handshake,
		VersionedPlugins: transport.PluginSet(&transport.GRPCPlugin{
			Register: func(*plugin.GRPCBroker, *grpc.Server) error { return nil },
		}),
		GRPCServer: plugin.DefaultGRPCServer,
	})
}
