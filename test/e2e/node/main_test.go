//go:build e2e

// Package nodee2e runs the real microlet binary, with its real plugins,
// against a private containerd (internal/devnode) and checks what the node
// does with real pods: static pods coming and going, restart policies and
// backoff, init and sidecar order, hooks, grace periods, restarts of the
// core and of the runtime, plugins on the real binary, cgroups and probes.
// docs/testing.md describes the harness.
package nodee2e

import (
	"fmt"
	"os"
	"os/exec"
	"testing"
)

// binDir holds microlet and the plugin binaries: MICROLET_BIN (make
// test-e2e sets it to _output/bin), or a directory TestMain builds the
// suite's programs into.
var binDir string

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

// moduleRoot is the microlet checkout, relative to this package's directory
// (where go test runs the test binary).
const moduleRoot = "../../.."

// suiteBinaries are the main packages of the programs the suite runs: the
// daemon and the plugins its nodes configure.
var suiteBinaries = []string{
	"./cmd/microlet",
	"./plugins/cgroup/cmd/microlet-cgroup-default",
	"./plugins/probes/cmd/microlet-probes-default",
	"./plugins/eviction/cmd/microlet-eviction-kubelet",
	"./plugins/eviction/cmd/microlet-eviction-priority",
	"./plugins/imagegc/cmd/microlet-imagegc-lru",
	"./plugins/stats/cmd/microlet-stats-default",
}

// buildBinaries builds the suite's programs as the Makefile does (static,
// stripped, each named after its directory) into dir, and makes dir 0755
// so that the plugin host's trust checks accept it.
func buildBinaries(dir string) error {
	args := append([]string{"build", "-trimpath", "-ldflags", "-s -w", "-o", dir + "/"}, suiteBinaries...)
	cmd := exec.Command("go", args...)
	cmd.Dir = moduleRoot
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building microlet and its plugins: %v\n%s", err, out)
	}
	return os.Chmod(dir, 0o755)
}
