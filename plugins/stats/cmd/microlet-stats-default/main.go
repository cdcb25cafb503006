// Command microlet-stats-default is the default stats plugin: the node's,
// pods' and containers' stats from /proc, cgroups, statfs and the
// runtime's CRI stats, as the kubelet's Summary API (docs/stats.md).
package main

import (
	"github.com/microlet/microlet/plugins/stats/provider"
	"github.com/microlet/microlet/sdk"
)

func main() {
	sdk.Serve[provider.Config](sdk.Info{Kind: sdk.KindStats, Name: "default", Version: "0.1.0"}, &provider.Plugin{})
}
