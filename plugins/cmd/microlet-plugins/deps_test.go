package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestPluginsStayLean keeps what the built-in plugins link small: every
// plugin process maps this executable and runs the init of every package
// in it. The executable links one k8s.io package, the upstream device
// plugin API that the devices bridge speaks (k8s.io/apimachinery alone
// would add gogo protobuf, cbor and sigs.k8s.io/json); hostdev, the
// vendor-style devices plugin, links none at all. The D-Bus client
// (graceful node shutdown) is the core's alone.
func TestPluginsStayLean(t *testing.T) {
	for pkg, allowed := range map[string][]string{
		".": {"k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"},
		"github.com/microlet/microlet/plugins/devices/hostdev": nil,
	} {
		out, err := exec.Command("go", "list", "-deps", pkg).CombinedOutput()
		if err != nil {
			t.Fatalf("go list -deps %s: %v\n%s", pkg, err, out)
		}
		deps := strings.Fields(string(out))
		if len(deps) < 10 {
			t.Fatalf("go list -deps %s listed almost nothing:\n%s", pkg, out)
		}
	next:
		for _, dep := range deps {
			for _, ok := range allowed {
				if dep == ok {
					continue next
				}
			}
			for _, heavy := range []string{"k8s.io/", "sigs.k8s.io/", "github.com/gogo/", "github.com/fxamacker/cbor", "gopkg.in/inf.v0", "github.com/godbus/"} {
				if strings.HasPrefix(dep, heavy) {
					t.Errorf("%s links %s", pkg, dep)
				}
			}
		}
	}
}
