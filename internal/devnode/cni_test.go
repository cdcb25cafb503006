package devnode

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/containernetworking/cni/libcni"
	"github.com/hashicorp/go-hclog"

	"github.com/microlet/microlet/internal/prereq"
)

func TestCNIConfListLoads(t *testing.T) {
	s := slot(7)
	dir := t.TempDir()
	data, err := cniConfList(s.network(), s.bridge(), s.subnet().String(), filepath.Join(dir, "ipam"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "10-"+s.network()+".conflist"), data, 0o644); err != nil {
		t.Fatal(err)
	}
	// As containerd's CRI plugin finds it: the network in the directory.
	list, err := libcni.LoadNetworkConf(dir, s.network())
	if err != nil {
		t.Fatalf("libcni cannot load the network: %v", err)
	}
	var types []string
	for _, p := range list.Plugins {
		types = append(types, p.Network.Type)
	}
	if got := strings.Join(types, ","); got != "bridge,portmap" {
		t.Errorf("plugins %s, want bridge,portmap", got)
	}
	for _, want := range []string{`"bridge": "mldev7"`, `"subnet": "10.88.7.0/24"`, `"isGateway": true`, `"ipMasq": false`, `"portMappings": true`} {
		if !strings.Contains(string(data), want) {
			t.Errorf("conflist lacks %s:\n%s", want, data)
		}
	}
	if _, err := os.Stat(filepath.Join(CNIBinDir, "bridge")); err != nil {
		prereq.Missing(t, "no CNI plugins to validate against: %v", err)
	}
	// VERSION against the installed plugins: each must speak the list's
	// version.
	if _, err := libcni.NewCNIConfig([]string{CNIBinDir}, nil).ValidateNetworkList(context.Background(), list); err != nil {
		t.Errorf("ValidateNetworkList: %v", err)
	}
}

func TestSlotNames(t *testing.T) {
	for _, s := range []slot{firstSlot, lastSlot} {
		if len(s.bridge()) > 15 {
			t.Errorf("bridge name %q is longer than a link name may be (15)", s.bridge())
		}
		n := newNode(s, "/tmp/microlet-devnode-1234567890", hclog.NewNullLogger())
		if sock := n.Socket + ".ttrpc"; len(sock) >= 100 {
			t.Errorf("socket path %s is %d bytes, want < 100", sock, len(sock))
		}
		if other := newNode(s, "/tmp/microlet-devnode-1234567891", hclog.NewNullLogger()); other.Socket == n.Socket {
			t.Errorf("two nodes on slot %d share the socket path %s", s, n.Socket)
		}
	}
	if got := slot(254).subnet().String(); got != "10.88.254.0/24" {
		t.Errorf("slot 254 subnet %s", got)
	}
}

func TestParseRouteAddr(t *testing.T) {
	// /proc/net/route prints the 32-bit word holding the address.
	tests := []struct{ field, want string }{
		{"0002A8C0", "192.168.2.0"},
		{"00FFFFFF", "255.255.255.0"},
		{"00000000", "0.0.0.0"},
		{"0158000A", "10.0.88.1"},
	}
	for _, tt := range tests {
		got, err := parseRouteAddr(tt.field)
		if err != nil || got.String() != tt.want {
			t.Errorf("parseRouteAddr(%s) = %v, %v; want %s", tt.field, got, err, tt.want)
		}
	}
	if _, err := parseRouteAddr("zz"); err == nil {
		t.Error("parseRouteAddr accepted a non-hex field")
	}
}

func TestOverlaps(t *testing.T) {
	cidr := func(s string) *net.IPNet {
		_, n, err := net.ParseCIDR(s)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	tests := []struct {
		a, b string
		want bool
	}{
		{"10.88.7.0/24", "10.88.7.0/24", true},
		{"10.88.0.0/16", "10.88.7.0/24", true},
		{"10.88.7.0/24", "10.88.7.128/25", true},
		{"10.88.7.0/24", "10.88.8.0/24", false},
		{"192.0.2.0/24", "10.88.1.0/24", false},
	}
	for _, tt := range tests {
		if got := overlaps(cidr(tt.a), cidr(tt.b)); got != tt.want {
			t.Errorf("overlaps(%s, %s) = %v, want %v", tt.a, tt.b, got, tt.want)
		}
	}
}
