//go:build e2e

package pressuree2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// BinDir holds microlet and every plugin binary: MICROLET_BIN (make
// test-e2e sets it to _output/bin), or a directory Main builds them into.
var BinDir string

// Main runs a test binary's tests with BinDir set, building the binaries
// first when MICROLET_BIN is unset, and removes what it built afterwards.
// Call it from TestMain: os.Exit(pressuree2e.Main(m)).
func Main(m *testing.M) int {
	BinDir = os.Getenv("MICROLET_BIN")
	if BinDir == "" {
		dir, err := os.MkdirTemp("", "microlet-pressure-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer os.RemoveAll(dir)
		if err := buildBinaries(dir); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		BinDir = dir
	}
	return m.Run()
}

// buildBinaries builds the daemon and every plugin as the Makefile does
// (static, stripped, one binary per main package, named after its
// directory) into dir, and makes dir 0755 so that the plugin host's trust
// checks accept it.
func buildBinaries(dir string) error {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return fmt.Errorf("finding the module: %w", err)
	}
	root := filepath.Dir(strings.TrimSpace(string(out)))
	pkgs := []string{"./cmd/microlet"}
	for _, pattern := range []string{"plugins/*/cmd/microlet-*", "examples/plugins/microlet-*"} {
		found, err := filepath.Glob(filepath.Join(root, pattern))
		if err != nil {
			return err
		}
		for _, p := range found {
			rel, err := filepath.Rel(root, p)
			if err != nil {
				return err
			}
			pkgs = append(pkgs, "./"+rel)
		}
	}
	cmd := exec.Command("go", append([]string{"build", "-trimpath", "-ldflags", "-s -w", "-o", dir + "/"}, pkgs...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building microlet and its plugins: %v\n%s", err, out)
	}
	return os.Chmod(dir, 0o755)
}
