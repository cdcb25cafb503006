package sdktest

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestBuildOncePerPackage builds a package in one test and gets a copy of
// that build in a later one, after the first test's temp dir is gone.
func TestBuildOncePerPackage(t *testing.T) {
	const pkg = "./testdata/hello"
	var first []byte
	var firstPath string
	t.Run("build", func(t *testing.T) {
		firstPath = Build(t, pkg)
		var err error
		if first, err = os.ReadFile(firstPath); err != nil {
			t.Fatal(err)
		}
	})
	if _, err := os.Stat(firstPath); !os.IsNotExist(err) {
		t.Fatalf("the first build outlived its test's temp dir: %v", err)
	}
	t.Run("copy", func(t *testing.T) {
		path := Build(t, pkg)
		if filepath.Base(path) != "hello" {
			t.Errorf("binary named %s, want hello", filepath.Base(path))
		}
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode().Perm() != 0o755 {
			t.Errorf("copy has mode %v, want 0755", info.Mode().Perm())
		}
		copied, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(copied, first) {
			t.Errorf("the copy differs from the build (%d bytes, want %d)", len(copied), len(first))
		}
	})
}
