package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/pflag"
)

// sources describes the inputs of one Load in a test.
type sources struct {
	main    string            // main file content; "" for no main file
	dropIns map[string]string // drop-in file name -> content
	env     []string
	args    []string // command-line arguments; nil for no flag set
}

// paths are where a test's files were written, for expected messages.
type paths struct{ main, dir string }

// expand replaces {main} and {dir} in s.
func (p paths) expand(s string) string {
	return strings.NewReplacer("{main}", p.main, "{dir}", p.dir).Replace(s)
}

// options writes the files of s into a fresh temp dir and returns the
// LoadOptions naming them.
func (s sources) options(t *testing.T) (LoadOptions, paths) {
	t.Helper()
	root := t.TempDir()
	p := paths{main: filepath.Join(root, "microlet.hcl"), dir: filepath.Join(root, "conf.d")}
	opts := LoadOptions{Environ: s.env}
	if s.main != "" {
		writeFile(t, p.main, s.main)
		opts.MainFile = p.main
	}
	if s.dropIns != nil {
		if err := os.Mkdir(p.dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for name, content := range s.dropIns {
			writeFile(t, filepath.Join(p.dir, name), content)
		}
		opts.DropInDir = p.dir
	}
	if s.args != nil {
		opts.Flags = parseFlags(t, s.args...)
	}
	return opts, p
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func parseFlags(t *testing.T, args ...string) *pflag.FlagSet {
	t.Helper()
	fs := pflag.NewFlagSet("microlet", pflag.ContinueOnError)
	RegisterFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatalf("parse %q: %v", args, err)
	}
	return fs
}

// mustLoad loads s and fails the test on any error.
func mustLoad(t *testing.T, s sources) (*Config, paths) {
	t.Helper()
	opts, p := s.options(t)
	cfg, err := Load(opts)
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	return cfg, p
}

// loadErrors loads s, which must fail, and returns the error lines.
func loadErrors(t *testing.T, s sources) ([]string, paths) {
	t.Helper()
	opts, p := s.options(t)
	cfg, err := Load(opts)
	if err == nil {
		t.Fatalf("Load succeeded with %+v, want errors", cfg)
	}
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Load error is %T, want Errors: %v", err, err)
	}
	return strings.Split(err.Error(), "\n"), p
}
