package sdk_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestPluginsStayLean keeps heavy modules out of what every plugin links:
// k8s.io/apimachinery alone drags in gogo protobuf, cbor and sigs.k8s.io/json
// (about 1.5 MB per binary). The SDK's tests may use them; the SDK may not.
func TestPluginsStayLean(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../sdk/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/microlet/microlet/sdk") || !slices.Contains(deps, "google.golang.org/grpc") {
		t.Fatalf("go list -deps did not list the SDK and its dependencies:\n%s", out)
	}
	for _, pkg := range deps {
		for _, heavy := range []string{"k8s.io/", "sigs.k8s.io/", "github.com/gogo/", "github.com/fxamacker/cbor", "gopkg.in/inf.v0"} {
			if strings.HasPrefix(pkg, heavy) {
				t.Errorf("the SDK links %s", pkg)
			}
		}
	}
}
