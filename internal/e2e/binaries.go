// Package e2e holds what the end-to-end tests and benchmarks share beside
// the node itself (internal/devnode): the microlet binaries of E2E_BIN_DIR
// (make test-e2e sets it to _output/bin) or built for the run, the
// environment the core starts with, and helpers for processes, ports,
// temporary directories and logs.
package e2e

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/microlet/microlet/internal/devnode"
	"github.com/microlet/microlet/internal/lastresort"
)

// EnvDir names the directory holding microlet and every plugin binary.
const EnvDir = "E2E_BIN_DIR"

// Main runs a test binary's tests with *dir set to $E2E_BIN_DIR, or, when
// that is unset, to a directory it builds every binary into and removes
// afterwards, under the lastresort watchdog. Call it from TestMain:
// os.Exit(e2e.Main(m, &binDir)).
func Main(m *testing.M, dir *string) int {
	*dir = os.Getenv(EnvDir)
	if *dir == "" {
		tmp, err := os.MkdirTemp("", "microlet-e2e-bin-")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		unregister := lastresort.Register("binaries in "+tmp, func() error { return os.RemoveAll(tmp) })
		defer func() {
			os.RemoveAll(tmp)
			unregister()
		}()
		if err := Build(tmp); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		*dir = tmp
	}
	// The timeout's alarm starts in m.Run, after the build.
	return lastresort.Main(m)
}

// Build builds the daemon, the built-in plugins and the example plugins as
// the Makefile does (static, stripped; the built-in plugins one executable
// hard-linked under each plugin's name, the examples one binary each)
// into dir, and makes dir 0755 so that the plugin host's trust checks
// accept it.
func Build(dir string) error {
	root, err := devnode.RepoRoot()
	if err != nil {
		return err
	}
	pkgs := []string{"./cmd/microlet", "./" + builtinPlugins}
	examples, err := filepath.Glob(filepath.Join(root, "examples/plugins/microlet-*"))
	if err != nil {
		return err
	}
	for _, p := range examples {
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		pkgs = append(pkgs, "./"+rel)
	}
	cmd := exec.Command("go", append([]string{"build", "-trimpath", "-ldflags", "-s -w", "-o", dir + "/"}, pkgs...)...)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building microlet and its plugins: %v\n%s", err, out)
	}
	if err := linkBuiltinPlugins(dir); err != nil {
		return err
	}
	return os.Chmod(dir, 0o755)
}

// BuildProgram builds a helper program of the tests, the repository's
// package pkg ("./internal/..."), statically as the file out.
func BuildProgram(out, pkg string) error {
	root, err := devnode.RepoRoot()
	if err != nil {
		return err
	}
	cmd := exec.Command("go", "build", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %v\n%s", pkg, err, msg)
	}
	return nil
}

// builtinPlugins is the main package of the built-in plugins' executable.
const builtinPlugins = "plugins/cmd/microlet-plugins"

// linkBuiltinPlugins hard-links the built-in plugins' executable in dir
// under every name it serves, as make does.
func linkBuiltinPlugins(dir string) error {
	bundle := filepath.Join(dir, filepath.Base(builtinPlugins))
	out, err := exec.Command(bundle, "names").Output()
	if err != nil {
		return fmt.Errorf("%s names: %w", bundle, err)
	}
	names := strings.Fields(string(out))
	if len(names) == 0 {
		return fmt.Errorf("%s names listed no plugin", bundle)
	}
	for _, name := range names {
		if err := os.Link(bundle, filepath.Join(dir, name)); err != nil {
			return err
		}
	}
	return nil
}

// CoreEnv is the environment a test starts the core with: its own without
// MICROLET_* variables, which the core reads as config keys, so that a
// developer's shell cannot change what a test runs.
func CoreEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MICROLET_") {
			env = append(env, kv)
		}
	}
	return env
}

// PrivateBinaries copies the named executables from src to dst, keeping
// hard links between them (names hard-linked to one file in src stay
// links to one copy, as they would be installed), and drops the copies
// from the page cache (devnode.DropFromPageCache). A benchmark runs its
// agent from them: PSS divides a file's pages among the processes that
// map them, so another microlet running the same files (an end-to-end
// test, a make run node) would lower the agent's figure, and a rebuild of
// src during the run would make its core swap the plugins.
func PrivateBinaries(src, dst string, names []string) error {
	type copied struct {
		info os.FileInfo
		path string
	}
	var done []copied
	for _, name := range names {
		from, to := filepath.Join(src, name), filepath.Join(dst, name)
		info, err := os.Stat(from)
		if err != nil {
			return fmt.Errorf("%w (make build writes the binaries there)", err)
		}
		linked := false
		for _, c := range done {
			if os.SameFile(c.info, info) {
				if err := os.Link(c.path, to); err != nil {
					return err
				}
				linked = true
				break
			}
		}
		if linked {
			continue
		}
		data, err := os.ReadFile(from)
		if err != nil {
			return err
		}
		if err := os.WriteFile(to, data, 0o755); err != nil {
			return err
		}
		done = append(done, copied{info: info, path: to})
	}
	for _, name := range names {
		if err := devnode.DropFromPageCache(filepath.Join(dst, name)); err != nil {
			return err
		}
	}
	return nil
}
