//go:build e2e

// Package devicese2e runs the real microlet binary with its devices
// plugins against a private containerd (internal/devnode): host device
// nodes through microlet-devices-hostdev, and the upstream sample device
// plugin through microlet-devices-kubernetes, in real containers. The
// node harness of test/e2e/node lives in _test files of its own package,
// so the little of it these tests need is repeated here (node_test.go).
package devicese2e

import (
	"os"
	"testing"

	"github.com/microlet/microlet/internal/e2e"
)

// binDir holds microlet and every plugin binary (see e2e.Main).
var binDir string

func TestMain(m *testing.M) {
	os.Exit(e2e.Main(m, &binDir))
}
