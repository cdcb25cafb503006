// Command microlet-cgroup-default is the default cgroup plugin: the
// kubelet's QoS classes, cgroup layout, resource settings, node allocatable
// and resource-fit admission (docs/cgroups.md).
package main

import (
	"github.com/microlet/microlet/plugins/cgroup/planner"
	"github.com/microlet/microlet/sdk"
)

var info = sdk.Info{Kind: sdk.KindCgroup, Name: "default", Version: "0.1.0"}

func main() { sdk.Serve[planner.Config](info, &planner.Plugin{}) }
