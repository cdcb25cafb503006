// Package network checks the node's pod network. The runtime runs CNI
// (containerd's CRI plugin calls it for every sandbox), so the core only
// reads the same config the runtime will use and says precisely what keeps
// the network from being ready: no config, a broken file, a missing plugin.
// It can also write a bridge network for the node's pod CIDR, as kubenet
// did, so a new node needs no hand-written CNI file.
package network

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"strings"

	"github.com/containernetworking/cni/libcni"
	"github.com/containernetworking/cni/pkg/invoke"
)

// configExtensions are the files the runtime reads (containerd's CRI plugin).
var configExtensions = []string{".conf", ".conflist", ".json"}

// Check reads the network config the runtime will use (the first file of
// confDir in lexical order, as containerd picks it) and verifies that every
// plugin it chains exists in binDirs. The error says which of these fails.
func Check(confDir string, binDirs []string) error {
	if _, err := os.Stat(confDir); errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("no CNI network config: directory %s does not exist", confDir)
	}
	files, err := libcni.ConfFiles(confDir, configExtensions)
	switch {
	case err != nil:
		return fmt.Errorf("cannot read CNI config directory %s: %w", confDir, err)
	case len(files) == 0:
		return fmt.Errorf("no CNI network config in %s", confDir)
	}
	// libcni.ConfFiles returns files sorted.
	file := files[0]
	list, err := loadConfList(file)
	if err != nil {
		return fmt.Errorf("CNI network config %s: %w", file, err)
	}
	for _, plugin := range list.Plugins {
		if _, err := invoke.FindInPath(plugin.Network.Type, binDirs); err != nil {
			return fmt.Errorf("CNI network config %s: plugin %q not found in %s", file, plugin.Network.Type, strings.Join(binDirs, ", "))
		}
	}
	return nil
}

// loadConfList reads a .conflist, or a single-plugin .conf as a list of one.
func loadConfList(file string) (*libcni.NetworkConfigList, error) {
	if strings.HasSuffix(file, ".conflist") {
		return libcni.ConfListFromFile(file)
	}
	conf, err := libcni.ConfFromFile(file)
	if err != nil {
		return nil, err
	}
	return libcni.ConfListFromConf(conf)
}

// BridgeConfigFile is the name WriteBridgeConfig writes.
const BridgeConfigFile = "10-microlet-bridge.conflist"

// BridgeName is the bridge device of the network cni_bridge_config writes,
// kubenet's.
const BridgeName = "cbr0"

// WriteBridgeConfig writes a bridge network with host-local addresses from
// podCIDRs (one, or an IPv4 and an IPv6 one separated by a comma) and
// portmap for hostPorts, unless confDir already holds a network config. It
// reports whether it wrote one.
func WriteBridgeConfig(confDir, podCIDRs, bridge string) (bool, error) {
	if files, err := libcni.ConfFiles(confDir, configExtensions); err == nil && len(files) > 0 {
		return false, nil
	}
	var ranges [][]map[string]string
	var routes []map[string]string
	for _, cidr := range strings.Split(podCIDRs, ",") {
		prefix, err := netip.ParsePrefix(strings.TrimSpace(cidr))
		if err != nil {
			return false, fmt.Errorf("pod CIDR %q: %w", cidr, err)
		}
		ranges = append(ranges, []map[string]string{{"subnet": prefix.Masked().String()}})
		def := "0.0.0.0/0"
		if prefix.Addr().Is6() {
			def = "::/0"
		}
		routes = append(routes, map[string]string{"dst": def})
	}
	conf := map[string]any{
		"cniVersion": "1.0.0",
		"name":       "microlet",
		"plugins": []any{
			map[string]any{
				"type":        "bridge",
				"bridge":      bridge,
				"isGateway":   true,
				"ipMasq":      true,
				"hairpinMode": true,
				"ipam":        map[string]any{"type": "host-local", "ranges": ranges, "routes": routes},
			},
			map[string]any{"type": "portmap", "capabilities": map[string]bool{"portMappings": true}},
		},
	}
	data, err := json.MarshalIndent(conf, "", "  ")
	if err != nil {
		return false, err
	}
	if err := os.MkdirAll(confDir, 0o755); err != nil {
		return false, err
	}
	// Write to a temporary name and rename, so the runtime never reads half a file.
	tmp := filepath.Join(confDir, "."+BridgeConfigFile+".tmp")
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return false, err
	}
	return true, os.Rename(tmp, filepath.Join(confDir, BridgeConfigFile))
}
