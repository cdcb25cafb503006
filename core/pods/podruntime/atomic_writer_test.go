package podruntime

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// readVolume is what a container sees in dir: each file through the
// user-visible paths, with its mode.
func readVolume(t *testing.T, dir string, paths []string) map[string]fileProjection {
	t.Helper()
	got := map[string]fileProjection{}
	for _, p := range paths {
		full := filepath.Join(dir, p)
		data, err := os.ReadFile(full)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(full)
		if err != nil {
			t.Fatal(err)
		}
		got[p] = fileProjection{Data: data, Mode: fi.Mode().Perm()}
	}
	return got
}

// entries are dir's names, the timestamped directory as "..<ts>".
func entries(t *testing.T, dir string) []string {
	t.Helper()
	list, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, e := range list {
		name := e.Name()
		if strings.HasPrefix(name, "..2") {
			name = "..<ts>"
		}
		names = append(names, name)
	}
	return names
}

func TestAtomicWrite(t *testing.T) {
	at := time.Date(2026, 11, 26, 15, 4, 5, 0, time.UTC)
	tests := []struct {
		name        string
		first, next map[string]fileProjection
		wantEntries []string // after next
		wantErr     string
	}{
		{
			name:        "files and a nested path",
			next:        map[string]fileProjection{"a": {Data: []byte("1"), Mode: 0o644}, "d/b": {Data: []byte("2"), Mode: 0o400}},
			wantEntries: []string{"..<ts>", "..data", "a", "d"},
		},
		{
			name:        "an update replaces and removes",
			first:       map[string]fileProjection{"a": {Data: []byte("1"), Mode: 0o644}, "gone": {Data: []byte("x"), Mode: 0o644}},
			next:        map[string]fileProjection{"a": {Data: []byte("2"), Mode: 0o600}},
			wantEntries: []string{"..<ts>", "..data", "a"},
		},
		{
			name:        "empty payload",
			next:        map[string]fileProjection{},
			wantEntries: []string{"..<ts>", "..data"},
		},
		{name: "absolute path", next: map[string]fileProjection{"/etc/x": {}}, wantErr: "must be relative"},
		{name: "dot-dot element", next: map[string]fileProjection{"a/../../x": {}}, wantErr: "must not contain '..'"},
		{name: "dot-dot prefix", next: map[string]fileProjection{"..data": {}}, wantErr: "must not start with '..'"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if tt.first != nil {
				if err := atomicWrite(dir, tt.first, at); err != nil {
					t.Fatal(err)
				}
			}
			err := atomicWrite(dir, tt.next, at.Add(time.Second))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("atomicWrite = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := entries(t, dir); !slices.Equal(got, tt.wantEntries) {
				t.Errorf("entries = %v, want %v", got, tt.wantEntries)
			}
			paths := keys(tt.next)
			got := readVolume(t, dir, paths)
			for _, p := range paths {
				if string(got[p].Data) != string(tt.next[p].Data) || got[p].Mode != tt.next[p].Mode {
					t.Errorf("%s = %q %v, want %q %v", p, got[p].Data, got[p].Mode, tt.next[p].Data, tt.next[p].Mode)
				}
			}
			if link, _ := os.Readlink(filepath.Join(dir, atomicDataDir)); !strings.HasPrefix(link, "..2026_11_26_15_04_06.") {
				t.Errorf("..data -> %q, want the timestamped directory of the write", link)
			}
			for _, p := range paths {
				top, _, _ := strings.Cut(p, "/")
				if link, _ := os.Readlink(filepath.Join(dir, top)); link != filepath.Join(atomicDataDir, top) {
					t.Errorf("%s -> %q, want ..data/%s", top, link, top)
				}
			}
		})
	}
}

// TestAtomicWriteUnchanged: the same payload writes nothing, so that a
// pod sync does not churn the volume, but restores a missing link.
func TestAtomicWriteUnchanged(t *testing.T) {
	dir := t.TempDir()
	payload := map[string]fileProjection{"a": {Data: []byte("1"), Mode: 0o644}}
	if err := atomicWrite(dir, payload, time.Now()); err != nil {
		t.Fatal(err)
	}
	before, _ := os.Readlink(filepath.Join(dir, atomicDataDir))
	if err := os.Remove(filepath.Join(dir, "a")); err != nil {
		t.Fatal(err)
	}
	if err := atomicWrite(dir, payload, time.Now().Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.Readlink(filepath.Join(dir, atomicDataDir)); after != before {
		t.Errorf("..data moved from %s to %s for an unchanged payload", before, after)
	}
	if got := readVolume(t, dir, []string{"a"}); string(got["a"].Data) != "1" {
		t.Errorf("a = %q after restoring its link", got["a"].Data)
	}
	// A mode change alone is a change.
	payload["a"] = fileProjection{Data: []byte("1"), Mode: 0o600}
	if err := atomicWrite(dir, payload, time.Now()); err != nil {
		t.Fatal(err)
	}
	if got := readVolume(t, dir, []string{"a"}); got["a"].Mode != 0o600 {
		t.Errorf("a's mode = %v, want 0600", got["a"].Mode)
	}
}
