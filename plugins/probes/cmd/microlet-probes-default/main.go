// Command microlet-probes-default is the default probes plugin: the
// kubelet's liveness, readiness and startup probes (plugins/probes/workers).
package main

import (
	"github.com/microlet/microlet/plugins/probes/workers"
	"github.com/microlet/microlet/sdk"
)

func main() {
	sdk.Serve[workers.Config](workers.Info, workers.New())
}
