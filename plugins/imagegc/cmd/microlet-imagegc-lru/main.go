// Command microlet-imagegc-lru is the default imagegc plugin: the kubelet's
// least-recently-used image GC and its dead container GC (plugins/imagegc/lru).
package main

import (
	"github.com/microlet/microlet/plugins/imagegc/lru"
	"github.com/microlet/microlet/sdk"
)

func main() {
	sdk.Serve[lru.Config](sdk.Info{Kind: sdk.KindImageGC, Name: "lru", Version: "0.1.0"}, &lru.Plugin{})
}
