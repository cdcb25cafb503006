package devices_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPluginsStayLean keeps what the device plugins link small: hostdev
// links no k8s.io module at all, the bridge only the upstream device
// plugin API it bridges (k8s.io/apimachinery alone would add gogo
// protobuf, cbor and sigs.k8s.io/json to every binary).
func TestPluginsStayLean(t *testing.T) {
	for binary, allowed := range map[string][]string{
		"./cmd/microlet-devices-hostdev":    nil,
		"./cmd/microlet-devices-kubernetes": {"k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"},
	} {
		out, err := exec.Command("go", "list", "-deps", binary).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", binary, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("go list -deps %s listed almost nothing:\n%s", binary, out)
		}
	next:
		for _, pkg := range deps {
			for _, ok := range allowed {
				if pkg == ok {
					continue next
				}
			}
			for _, heavy := range []string{"k8s.io/", "sigs.k8s.io/", "github.com/gogo/", "github.com/fxamacker/cbor", "gopkg.in/inf.v0"} {
				if strings.HasPrefix(pkg, heavy) {
					t.Errorf("%s links %s", binary, pkg)
				}
			}
		}
	}
}
