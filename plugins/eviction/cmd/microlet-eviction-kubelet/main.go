// Command microlet-eviction-kubelet is the default eviction plugin: the
// kubelet's thresholds, ranking and admission (docs/eviction.md).
package main

import (
	"github.com/microlet/microlet/plugins/eviction/engine"
	"github.com/microlet/microlet/plugins/eviction/kubelet"
	"github.com/microlet/microlet/plugins/eviction/strategy"
	"github.com/microlet/microlet/sdk"
)

func main() {
	sdk.Serve[engine.Config](sdk.Info{Kind: sdk.KindEviction, Name: "kubelet", Version: "0.1.0"}, strategy.New(kubelet.New))
}
