// Command microlet-plugins is every built-in plugin in one executable,
// installed in the plugin directory once and hard-linked under each
// plugin's name (microlet-<kind>-<name>). It serves the plugin the core
// launched it for (the MICROLET_PLUGIN_KIND and _NAME it sets), else the
// one its own name says, as busybox does. Every plugin is still its own
// process, started, supervised and hot-swapped on its own: replacing one
// name with another binary replaces that plugin only.
//
// Why one executable: a Go plugin process maps most of its binary's code
// (the kernel maps 64 KiB around each page it touches), and processes
// share those pages only when they run the same file. Six separate 14 MB
// binaries cost the node 65 MB of proportional set and 84 MB of page
// cache; one shared 16 MB binary costs 14 MB and 16 MB
// (docs/performance.md). Nomad runs its executor and logmon plugins from
// its own binary for the same reason.
package main

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/microlet/microlet/plugins/cgroup/planner"
	"github.com/microlet/microlet/plugins/devices/bridge"
	"github.com/microlet/microlet/plugins/devices/hostdev"
	"github.com/microlet/microlet/plugins/eviction/priority"
	"github.com/microlet/microlet/plugins/eviction/psi"
	"github.com/microlet/microlet/plugins/eviction/strategy"
	"github.com/microlet/microlet/plugins/imagegc/lru"
	"github.com/microlet/microlet/plugins/probes/workers"
	"github.com/microlet/microlet/plugins/stats/provider"
	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/evictionengine"
	"github.com/microlet/microlet/sdk/evictionengine/kubelet"
	"github.com/microlet/microlet/sdk/transport"
)

const version = "0.1.0"

// builtins wires each built-in plugin to the SDK, by binary name.
var builtins = map[string]func(){
	"microlet-cgroup-default": func() {
		sdk.Serve[planner.Config](sdk.Info{Kind: sdk.KindCgroup, Name: "default", Version: version}, &planner.Plugin{})
	},
	"microlet-devices-hostdev": func() {
		sdk.Serve[hostdev.Config](sdk.Info{Kind: sdk.KindDevices, Name: "hostdev", Version: version}, hostdev.New())
	},
	"microlet-devices-kubernetes": func() {
		sdk.Serve[bridge.Config](sdk.Info{Kind: sdk.KindDevices, Name: "kubernetes", Version: version}, bridge.New())
	},
	"microlet-eviction-kubelet": func() {
		sdk.Serve[evictionengine.Config](sdk.Info{Kind: sdk.KindEviction, Name: "kubelet", Version: version}, strategy.New(kubelet.New))
	},
	"microlet-eviction-priority": func() {
		sdk.Serve[priority.Config](sdk.Info{Kind: sdk.KindEviction, Name: "priority", Version: version}, strategy.New(priority.New))
	},
	"microlet-eviction-psi": func() {
		sdk.Serve[psi.Config](sdk.Info{Kind: sdk.KindEviction, Name: "psi", Version: version}, strategy.New(psi.New))
	},
	"microlet-imagegc-lru": func() {
		sdk.Serve[lru.Config](sdk.Info{Kind: sdk.KindImageGC, Name: "lru", Version: version}, &lru.Plugin{})
	},
	"microlet-probes-default": func() {
		sdk.Serve[workers.Config](workers.Info, workers.New())
	},
	"microlet-stats-default": func() {
		sdk.Serve[provider.Config](sdk.Info{Kind: sdk.KindStats, Name: "default", Version: version}, &provider.Plugin{})
	},
}

func main() {
	for _, name := range []string{
		"microlet-" + os.Getenv(transport.EnvKind) + "-" + os.Getenv(transport.EnvName),
		filepath.Base(os.Args[0]),
	} {
		if serve, ok := builtins[name]; ok {
			serve()
			return
		}
	}
	names := make([]string, 0, len(builtins))
	for name := range builtins {
		names = append(names, name)
	}
	slices.Sort(names)
	// `microlet-plugins names` is what make and the tests link by.
	if len(os.Args) == 2 && os.Args[1] == "names" {
		fmt.Println(strings.Join(names, "\n"))
		return
	}
	fmt.Fprintf(os.Stderr, "microlet-plugins serves the plugin its name says; hard-link it into the plugin directory as one of:\n  %s\n(`%s names` prints them)\n",
		strings.Join(names, "\n  "), filepath.Base(os.Args[0]))
	os.Exit(2)
}
