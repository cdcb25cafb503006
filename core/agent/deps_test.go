package agent

import (
	"os/exec"
	"strings"
	"testing"
)

// TestCoreImportsNoPlugin keeps the core off the plugins' code: what both
// sides need (the eviction engine of the built-in evictor, say) lives under
// sdk/. The core's tests may still run the built-in plugins.
func TestCoreImportsNoPlugin(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "../../core/...", "../../cmd/...").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if len(deps) < 10 {
		t.Fatalf("go list -deps listed too little:\n%s", out)
	}
	for _, pkg := range deps {
		if strings.HasPrefix(pkg, "github.com/microlet/microlet/plugins/") {
			t.Errorf("the core imports %s", pkg)
		}
	}
}
