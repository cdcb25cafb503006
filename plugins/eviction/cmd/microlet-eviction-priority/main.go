// Command microlet-eviction-priority is the eviction plugin that evicts by
// priority first, then the youngest pod (docs/eviction.md).
package main

import (
	"github.com/microlet/microlet/plugins/eviction/priority"
	"github.com/microlet/microlet/plugins/eviction/strategy"
	"github.com/microlet/microlet/sdk"
)

func main() {
	sdk.Serve[priority.Config](sdk.Info{Kind: sdk.KindEviction, Name: "priority", Version: "0.1.0"}, strategy.New(priority.New))
}
