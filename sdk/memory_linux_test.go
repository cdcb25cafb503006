package sdk

import (
	"os"
	"path/filepath"
	"testing"
)

func TestFixedAddressExecutable(t *testing.T) {
	// go test links a fixed-address executable on linux unless told
	// -buildmode=pie; a file that is not ELF never qualifies.
	notELF := filepath.Join(t.TempDir(), "script")
	if err := os.WriteFile(notELF, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]bool{"/proc/self/exe": true, notELF: false, "/nonexistent": false} {
		if got := fixedAddressExecutable(path); got != want {
			t.Errorf("fixedAddressExecutable(%s) = %v, want %v", path, got, want)
		}
	}
}
