package pluginhost

import (
	"crypto/sha256"
	"encoding/hex"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/microlet/microlet/internal/prereq"
)

// binaryContent is what the trust checks hash in these tests; they never
// execute it.
const binaryContent = "#!/bin/false\n"

func TestOpenVerifiedBinary(t *testing.T) {
	sum := sha256.Sum256([]byte(binaryContent))
	digest := hex.EncodeToString(sum[:])
	euid := os.Geteuid()
	const name = "microlet-eviction-test"

	tests := []struct {
		name    string
		prepare func(t *testing.T, dir, binary string)
		pin     string
		euid    int
		// wantErr are parts of the error; none means success.
		wantErr []string
	}{
		{name: "accepted", euid: euid},
		{name: "accepted with the right pin", pin: digest, euid: euid},
		{
			name:    "wrong pin",
			pin:     strings.Repeat("a", 64),
			euid:    euid,
			wantErr: []string{"has sha256 " + digest, "the config pins " + strings.Repeat("a", 64)},
		},
		{
			name:    "world-writable dir",
			prepare: func(t *testing.T, dir, _ string) { chmod(t, dir, 0o777) },
			euid:    euid,
			wantErr: []string{"plugin directory", "writable by group or others (mode 0777)"},
		},
		{
			name:    "group-writable binary",
			prepare: func(t *testing.T, _, binary string) { chmod(t, binary, 0o775) },
			euid:    euid,
			wantErr: []string{"plugin binary", "writable by group or others (mode 0775)"},
		},
		{
			name:    "not executable",
			prepare: func(t *testing.T, _, binary string) { chmod(t, binary, 0o644) },
			euid:    euid,
			wantErr: []string{"is not executable (mode 0644)"},
		},
		{
			name: "symlink",
			prepare: func(t *testing.T, dir, binary string) {
				target := filepath.Join(dir, "real")
				if err := os.Rename(binary, target); err != nil {
					t.Fatal(err)
				}
				if err := os.Symlink(target, binary); err != nil {
					t.Fatal(err)
				}
			},
			euid:    euid,
			wantErr: []string{"is a symlink"},
		},
		{
			name: "directory",
			prepare: func(t *testing.T, _, binary string) {
				if err := os.Remove(binary); err != nil {
					t.Fatal(err)
				}
				if err := os.Mkdir(binary, 0o755); err != nil {
					t.Fatal(err)
				}
			},
			euid:    euid,
			wantErr: []string{"is a directory; expected a regular file"},
		},
		{
			name: "named pipe",
			prepare: func(t *testing.T, _, binary string) {
				if err := os.Remove(binary); err != nil {
					t.Fatal(err)
				}
				if err := syscall.Mkfifo(binary, 0o755); err != nil {
					t.Fatal(err)
				}
			},
			euid:    euid,
			wantErr: []string{"is a named pipe; expected a regular file"},
		},
		{
			name:    "missing",
			prepare: func(t *testing.T, _, binary string) { os.Remove(binary) },
			euid:    euid,
			wantErr: []string{"does not exist"},
		},
		{
			name:    "not root's for a root core",
			prepare: func(t *testing.T, _, binary string) { chown(t, binary, 65534) },
			euid:    0,
			wantErr: []string{"plugin binary", "is owned by uid 65534", "trusts only files owned by root"},
		},
		{
			name:    "dir not root's for a root core",
			prepare: func(t *testing.T, dir, _ string) { chown(t, dir, 65534) },
			euid:    0,
			wantErr: []string{"plugin directory", "is owned by uid 65534"},
		},
		{
			name:    "someone else's for a non-root core",
			prepare: func(t *testing.T, _, binary string) { chown(t, binary, 65534) },
			euid:    1000,
			wantErr: []string{"is owned by uid 65534; expected root or the core's own uid 1000"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			chmod(t, dir, 0o755)
			binary := filepath.Join(dir, name)
			if err := os.WriteFile(binary, []byte(binaryContent), 0o755); err != nil {
				t.Fatal(err)
			}
			if tt.prepare != nil {
				tt.prepare(t, dir, binary)
			}
			bin, err := openVerifiedBinary(dir, name, tt.pin, tt.euid)
			if len(tt.wantErr) == 0 {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				defer bin.Close()
				got, err := bin.sha256()
				if err != nil || got != digest || bin.name != name || bin.path != binary {
					t.Errorf("got %+v with sha256 %s (%v), want sha256 %s, name %s, path %s", bin, got, err, digest, name, binary)
				}
				return
			}
			if err == nil {
				bin.Close()
				t.Fatalf("accepted; want an error mentioning %q", tt.wantErr)
			}
			for _, want := range tt.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestOpenVerifiedBinaryRefusesPaths(t *testing.T) {
	for _, name := range []string{"", ".", "..", "../microlet-eviction-x", "sub/microlet-eviction-x"} {
		if _, err := openVerifiedBinary(t.TempDir(), name, "", os.Geteuid()); err == nil || !strings.Contains(err.Error(), "without path separators") {
			t.Errorf("binary name %q: error %v, want a refusal of the name", name, err)
		}
	}
}

func chmod(t *testing.T, path string, mode os.FileMode) {
	t.Helper()
	if err := os.Chmod(path, mode); err != nil {
		t.Fatal(err)
	}
}

// chown gives path to uid, which needs root; without it the test is skipped.
func chown(t *testing.T, path string, uid int) {
	t.Helper()
	prereq.Root(t, "it changes a file's owner")
	if err := os.Chown(path, uid, -1); err != nil {
		t.Fatal(err)
	}
}
