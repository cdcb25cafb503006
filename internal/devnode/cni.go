package devnode

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"

	"github.com/containernetworking/cni/libcni"
)

// cniVersion is the newest CNI spec version Debian 12's plugins (1.1.1) speak.
const cniVersion = "1.0.0"

// The plugins of a node's network, in the shapes the plugins read.
type (
	bridgePlugin struct {
		Type        string    `json:"type"`
		Bridge      string    `json:"bridge"`
		IsGateway   bool      `json:"isGateway"`
		IPMasq      bool      `json:"ipMasq"`
		HairpinMode bool      `json:"hairpinMode"`
		IPAM        hostLocal `json:"ipam"`
	}
	hostLocal struct {
		Type    string        `json:"type"`
		DataDir string        `json:"dataDir"`
		Ranges  [][]ipamRange `json:"ranges"`
		Routes  []ipamRoute   `json:"routes"`
	}
	ipamRange struct {
		Subnet string `json:"subnet"`
	}
	ipamRoute struct {
		Dst string `json:"dst"`
	}
	capabilityPlugin struct {
		Type         string          `json:"type"`
		Capabilities map[string]bool `json:"capabilities,omitempty"`
	}
	confList struct {
		CNIVersion string `json:"cniVersion"`
		Name       string `json:"name"`
		Plugins    []any  `json:"plugins"`
	}
)

// cniConfList is the node's network: a bridge of its own with host-local
// addresses from its subnet, the bridge's address as the pods' gateway and
// no masquerading (tests talk only to loopback and pod addresses), then
// portmap for hostPort. containerd's CRI plugin brings up the pods' lo
// itself with the loopback plugin from bin_dir, so the chain does not.
func cniConfList(name, bridge, subnet, ipamDir string) ([]byte, error) {
	return json.MarshalIndent(confList{
		CNIVersion: cniVersion,
		Name:       name,
		Plugins: []any{
			bridgePlugin{
				Type:        "bridge",
				Bridge:      bridge,
				IsGateway:   true,
				HairpinMode: true,
				IPAM: hostLocal{
					Type:    "host-local",
					DataDir: ipamDir,
					Ranges:  [][]ipamRange{{{Subnet: subnet}}},
					Routes:  []ipamRoute{{Dst: "0.0.0.0/0"}},
				},
			},
			capabilityPlugin{Type: "portmap", Capabilities: map[string]bool{"portMappings": true}},
		},
	}, "", "  ")
}

// loopbackNetwork is the network name under which containerd's CRI plugin
// brings up every sandbox's lo (go-cni's WithLoNetwork), shared by all
// containerd instances.
const loopbackNetwork = "cni-loopback"

// cniDelLeftovers runs CNI DEL for every attachment of the node's sandboxes
// that libcni's cache still records: those containerd never tore down (it
// was killed, or hung). The node's sandboxes are those attached to its
// network plus those in sandboxIDs. DEL releases what ADD took outside the
// node's directories, such as portmap's iptables chains; libcni then drops
// the cache entry.
func cniDelLeftovers(ctx context.Context, network string, sandboxIDs []string) error {
	cni := libcni.NewCNIConfig([]string{CNIBinDir}, nil)
	attachments, err := cni.GetCachedAttachments("")
	if err != nil {
		return fmt.Errorf("read the CNI cache: %w", err)
	}
	ours := map[string]bool{}
	for _, id := range sandboxIDs {
		ours[id] = true
	}
	for _, a := range attachments {
		if a.Network == network {
			ours[a.ContainerID] = true
		}
	}
	var errs []error
	for _, a := range attachments {
		if !ours[a.ContainerID] || (a.Network != network && a.Network != loopbackNetwork) {
			continue
		}
		list, err := libcni.NetworkConfFromBytes(a.Config)
		if err != nil {
			errs = append(errs, fmt.Errorf("cached CNI config of %s on %s: %w", a.ContainerID, a.Network, err))
			continue
		}
		rt := &libcni.RuntimeConf{
			ContainerID:    a.ContainerID,
			NetNS:          a.NetNS,
			IfName:         a.IfName,
			Args:           a.CniArgs,
			CapabilityArgs: a.CapabilityArgs,
		}
		if err := cni.DelNetworkList(ctx, list, rt); err != nil {
			errs = append(errs, fmt.Errorf("CNI DEL of %s on %s: %w", a.ContainerID, a.Network, err))
		}
	}
	return errors.Join(errs...)
}

// hostNetworks returns the IPv4 networks the host already reaches: the
// addresses on its links and the destinations of its routes, without the
// default route.
func hostNetworks() ([]*net.IPNet, error) {
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		return nil, err
	}
	var nets []*net.IPNet
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil {
			nets = append(nets, n)
		}
	}
	routes, err := ipv4Routes()
	if err != nil {
		return nil, err
	}
	return append(nets, routes...), nil
}

// ipv4Routes reads the kernel's IPv4 routing table from /proc/net/route.
func ipv4Routes() ([]*net.IPNet, error) {
	f, err := os.Open("/proc/net/route")
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var routes []*net.IPNet
	scanner := bufio.NewScanner(f)
	scanner.Scan() // the header
	for scanner.Scan() {
		fields := strings.Fields(scanner.Text())
		if len(fields) < 8 {
			continue
		}
		dst, err1 := parseRouteAddr(fields[1])
		mask, err2 := parseRouteAddr(fields[7])
		if err1 != nil || err2 != nil {
			return nil, fmt.Errorf("/proc/net/route: unexpected line %q", scanner.Text())
		}
		if mask.Equal(net.IPv4zero) {
			continue // the default route overlaps everything
		}
		routes = append(routes, &net.IPNet{IP: dst, Mask: net.IPMask(mask)})
	}
	return routes, scanner.Err()
}

// parseRouteAddr decodes an address of /proc/net/route: the hex of the
// 32-bit word that holds it, in the host's byte order.
func parseRouteAddr(field string) (net.IP, error) {
	v, err := strconv.ParseUint(field, 16, 32)
	if err != nil {
		return nil, err
	}
	ip := make(net.IP, 4)
	binary.NativeEndian.PutUint32(ip, uint32(v))
	return ip, nil
}

// overlaps reports whether two networks share an address.
func overlaps(a, b *net.IPNet) bool {
	return a.Contains(b.IP) || b.Contains(a.IP)
}

// portmap's host-wide nat chains: created on the first hostPort of any CNI
// user on the host, never removed, and recreated by portmap on every ADD.
const portmapDNATChain = "CNI-HOSTPORT-DNAT"

var portmapChains = []string{portmapDNATChain, "CNI-HOSTPORT-MASQ", "CNI-HOSTPORT-SETMARK"}

// removeIdlePortmapChains removes portmap's host-wide nat chains, and the
// jumps to them, when no hostPort is forwarded any more: no rule is left
// in CNI-HOSTPORT-DNAT. Called when no node is left on the host; another
// CNI user's next hostPort sets them up again.
func removeIdlePortmapChains() error {
	rules, err := exec.Command("iptables", "-w", "-t", "nat", "-S", portmapDNATChain).Output()
	if err != nil {
		return nil // no such chain: portmap never forwarded a port
	}
	if strings.Contains(string(rules), "-A "+portmapDNATChain) {
		return nil // ports are forwarded
	}
	var errs []error
	for _, builtin := range []string{"PREROUTING", "OUTPUT", "POSTROUTING"} {
		out, err := exec.Command("iptables", "-w", "-t", "nat", "-L", builtin, "-n", "--line-numbers").Output()
		if err != nil {
			errs = append(errs, fmt.Errorf("iptables -t nat -L %s: %w", builtin, err))
			continue
		}
		lines := strings.Split(string(out), "\n")
		// Delete from the bottom up, so the numbers above stay right.
		for i := len(lines) - 1; i >= 0; i-- {
			fields := strings.Fields(lines[i])
			if len(fields) < 2 || !slices.Contains(portmapChains, fields[1]) {
				continue
			}
			if out, err := exec.Command("iptables", "-w", "-t", "nat", "-D", builtin, fields[0]).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("iptables -t nat -D %s %s: %w: %s", builtin, fields[0], err, out))
			}
		}
	}
	for _, flag := range []string{"-F", "-X"} {
		for _, chain := range portmapChains {
			if out, err := exec.Command("iptables", "-w", "-t", "nat", flag, chain).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("iptables -t nat %s %s: %w: %s", flag, chain, err, out))
			}
		}
	}
	return errors.Join(errs...)
}
