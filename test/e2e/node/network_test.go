//go:build e2e

package nodee2e

import (
	"errors"
	"io/fs"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/microlet/microlet/core/node/network"
)

// A node whose runtime has no CNI network gets microlet's bridge network
// for pod_cidr (cni_bridge_config), and its pods take addresses from it.
// Not parallel: the bridge device, cbr0, is the host's.
func TestBridgeNetworkForPodCIDR(t *testing.T) {
	n := startNode(t, nodeOptions{bridgeNetwork: true})
	if _, err := os.Stat(filepath.Join(n.dev.CNIConfDir, network.BridgeConfigFile)); err != nil {
		t.Fatalf("microlet wrote no bridge network: %v", err)
	}
	cidr, err := netip.ParsePrefix(n.dev.Subnet)
	if err != nil {
		t.Fatal(err)
	}
	n.writeManifest("bridged.yaml", sleeper("bridged"))
	p := n.waitPod("bridged", "running and ready", runningAndReady)
	ip, err := netip.ParseAddr(p.Status.PodIP)
	if err != nil || !cidr.Contains(ip) {
		t.Errorf("the pod's address %q (%v) is not in pod_cidr %s", p.Status.PodIP, err, cidr)
	}
	n.removeManifest("bridged.yaml")
	n.waitPodGone("bridged")
	n.waitRuntimeStopped(p.UID)
}

// removeBridgeNetwork removes what the bridge network left on the host
// once its pods are gone: the bridge device and host-local's address
// records (/var/lib/cni/networks/<name>).
func removeBridgeNetwork(t *testing.T) {
	if out, err := exec.Command("ip", "link", "delete", network.BridgeName).CombinedOutput(); err != nil {
		if _, statErr := os.Stat("/sys/class/net/" + network.BridgeName); !errors.Is(statErr, fs.ErrNotExist) {
			t.Errorf("delete the bridge %s: %v: %s", network.BridgeName, err, out)
		}
	}
	if err := os.RemoveAll("/var/lib/cni/networks/microlet"); err != nil {
		t.Error(err)
	}
}
