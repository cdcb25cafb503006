package machine

import (
	"os"
	"path/filepath"
	"testing"
)

func TestReadIdentity(t *testing.T) {
	proc, sys := t.TempDir(), t.TempDir()
	write := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(proc, "sys/kernel/random/boot_id"), "b0075e3b-1\n")
	write(filepath.Join(sys, "class/dmi/id/product_uuid"), "4c4c4544-2\n")
	id := ReadIdentity(Options{ProcFS: proc, SysFS: sys})
	if id.BootID != "b0075e3b-1" || id.SystemUUID != "4c4c4544-2" || id.KernelVersion == "" {
		t.Errorf("identity %+v", id)
	}
}

func TestOSImage(t *testing.T) {
	dir := t.TempDir()
	tests := []struct{ content, want string }{
		{"NAME=\"Debian GNU/Linux\"\nPRETTY_NAME=\"Debian GNU/Linux 12 (bookworm)\"\n", "Debian GNU/Linux 12 (bookworm)"},
		{"PRETTY_NAME='Alpine Linux v3.20'\n", "Alpine Linux v3.20"},
		{"PRETTY_NAME=Plain\n", "Plain"},
		{"NAME=none\n", "Linux"},
	}
	for i, tt := range tests {
		path := filepath.Join(dir, "os-release")
		if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
			t.Fatal(err)
		}
		if got := osImage(path); got != tt.want {
			t.Errorf("%d: osImage = %q, want %q", i, got, tt.want)
		}
	}
	if got := osImage(filepath.Join(dir, "missing")); got != "Linux" {
		t.Errorf("without os-release: %q, want Linux", got)
	}
}
