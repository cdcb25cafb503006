//go:build e2e

// Package devicese2e runs the real microlet binary with its devices
// plugins against a private containerd (internal/devnode): host device
// nodes through microlet-devices-hostdev, and the upstream sample device
// plugin through microlet-devices-kubernetes, in real containers. The
// node harness of test/e2e/node lives in _test files of its own package,
// so the little of it these tests need is repeated here (node_test.go).
package devicese2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// binDir holds microlet and every plugin binary: MICROLET_BIN (make
// test-e2e sets it to _output/bin), or a directory TestMain builds them into.
var binDir string

// moduleRoot is the microlet checkout, relative to this package's
// directory (where go test runs the test binary).
const moduleRoot = "../../.."

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	binDir = os.Getenv("MICROLET_BIN")
	if binDir == "" {
		dir, err := os.MkdirTemp("", "microlet-e2e-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		if err := buildBinaries(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		binDir = dir
	}
	return m.Run()
}

// buildBinaries builds the daemon and the plugins these tests run, as the
// Makefile does, into dir (0755, so the plugin host trusts it).
func buildBinaries(dir string) error {
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", dir+"/", "./cmd/microlet",
		"./plugins/cgroup/cmd/microlet-cgroup-default",
		"./plugins/devices/cmd/microlet-devices-hostdev",
		"./plugins/devices/cmd/microlet-devices-kubernetes")
	cmd.Dir = moduleRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building microlet and its plugins: %v\n%s", err, out)
	}
	return os.Chmod(dir, 0o755)
}

// kubeBin is where hack/kube-tools/build.sh puts upstream binaries.
func kubeBin() string {
	if dir := os.Getenv("MICROLET_KUBE_BIN"); dir != "" {
		return dir
	}
	return filepath.Join(moduleRoot, ".cache", "kube", "bin")
}
