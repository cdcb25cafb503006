// Command microlet-devices-hostdev offers host device nodes matching
// configured globs as extended resources (docs/devices.md).
package main

import (
	"github.com/microlet/microlet/plugins/devices/hostdev"
	"github.com/microlet/microlet/sdk"
)

var info = sdk.Info{Kind: sdk.KindDevices, Name: "hostdev", Version: "0.1.0"}

func main() { sdk.Serve[hostdev.Config](info, hostdev.New()) }
