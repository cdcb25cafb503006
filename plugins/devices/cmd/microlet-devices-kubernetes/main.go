// Command microlet-devices-kubernetes bridges the upstream device-plugin
// API v1beta1 to microlet: vendor device plugins register on kubelet.sock
// as with the kubelet (docs/devices.md).
package main

import (
	"github.com/microlet/microlet/plugins/devices/bridge"
	"github.com/microlet/microlet/sdk"
)

var info = sdk.Info{Kind: sdk.KindDevices, Name: "kubernetes", Version: "0.1.0"}

func main() { sdk.Serve[bridge.Config](info, bridge.New()) }
