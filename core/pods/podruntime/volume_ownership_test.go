package podruntime

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/microlet/microlet/internal/prereq"
)

// TestSetVolumeOwnership: upstream's fsGroup ownership of a writable volume
// (group, group read and write, setgid directories, links not followed),
// done while the volume's root is not so owned, and then left alone.
func TestSetVolumeOwnership(t *testing.T) {
	prereq.Root(t, "it chowns files to another group")
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	file := filepath.Join(sub, "f")
	outside := filepath.Join(t.TempDir(), "outside")
	for _, err := range []error{
		os.Mkdir(sub, 0o700),
		os.WriteFile(file, nil, 0o600),
		os.WriteFile(outside, nil, 0o600),
		os.Symlink(outside, filepath.Join(dir, "link")),
	} {
		if err != nil {
			t.Fatal(err)
		}
	}
	const group = 2000
	if err := setVolumeOwnership(dir, group); err != nil {
		t.Fatal(err)
	}
	for path, want := range map[string]os.FileMode{
		dir:  os.ModeDir | os.ModeSetgid | 0o700 | fsGroupRWMask | fsGroupExecMask,
		sub:  os.ModeDir | os.ModeSetgid | 0o770,
		file: 0o660,
	} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode() != want|info.Mode()&0o007 || gid(info) != group {
			t.Errorf("%s: mode %v gid %d; want %v and group %d", path, info.Mode(), gid(info), want, group)
		}
	}
	if info, _ := os.Stat(outside); gid(info) == group || info.Mode().Perm() != 0o600 {
		t.Errorf("the link was followed: its target is %v, group %d", info.Mode(), gid(info))
	}

	// The root is owned now: a file changed by hand inside stays as it is.
	if err := os.Chmod(file, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := setVolumeOwnership(dir, group); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(file); info.Mode().Perm() != 0o600 {
		t.Errorf("a volume whose root is owned was walked again: %s is %v", file, info.Mode())
	}
}

func gid(info os.FileInfo) int64 { return int64(info.Sys().(*syscall.Stat_t).Gid) }
