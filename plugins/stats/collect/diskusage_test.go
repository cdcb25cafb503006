package collect

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"
)

// blocks is what a file of n bytes allocates on the test's filesystem.
func blocks(t *testing.T, path string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		t.Fatal(err)
	}
	return uint64(st.Blocks) * 512
}

func writeFile(t *testing.T, path string, size int) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, make([]byte, size), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestDiskUsage(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "a"), 10000)
	writeFile(t, filepath.Join(dir, "sub", "b"), 70000)
	if err := os.Link(filepath.Join(dir, "a"), filepath.Join(dir, "sub", "a-again")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("a", filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	var want uint64
	for _, p := range []string{".", "a", "sub", "sub/b", "link"} {
		want += blocks(t, filepath.Join(dir, p))
	}

	got, err := DiskUsage(dir)
	if err != nil {
		t.Fatal(err)
	}
	// dir, a (once, though linked twice), sub, sub/b, link.
	if got.Bytes != want || got.Inodes != 5 || got.Time.IsZero() {
		t.Errorf("DiskUsage = %+v, want %d bytes in 5 inodes", got, want)
	}
	if _, err := DiskUsage(filepath.Join(dir, "missing")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("DiskUsage of a missing tree: %v, want not-exist", err)
	}
}

func TestFilesUsage(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "0.log"), 5000)
	writeFile(t, filepath.Join(dir, "1.log.20260101-000000.gz"), 100)
	writeFile(t, filepath.Join(dir, "app", "0.log"), 90000) // a container's: not the pod's
	want := blocks(t, filepath.Join(dir, "0.log")) + blocks(t, filepath.Join(dir, "1.log.20260101-000000.gz"))

	got, err := FilesUsage(dir)
	if err != nil || got.Bytes != want || got.Inodes != 2 {
		t.Errorf("FilesUsage = %+v, %v; want %d bytes in 2 files", got, err, want)
	}
	if _, err := FilesUsage(filepath.Join(dir, "missing")); err == nil {
		t.Error("FilesUsage of a missing directory succeeded")
	}

	one, err := FileUsage(filepath.Join(dir, "0.log"))
	if err != nil || one.Bytes != blocks(t, filepath.Join(dir, "0.log")) || one.Inodes != 1 {
		t.Errorf("FileUsage = %+v, %v", one, err)
	}
	if none, err := FileUsage(filepath.Join(dir, "etc-hosts")); none != nil || err != nil {
		t.Errorf("FileUsage of a missing file = %+v, %v; want nothing", none, err)
	}
}

func TestStatfs(t *testing.T) {
	fs, err := Statfs(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if fs.Capacity == 0 || fs.Available > fs.Capacity || fs.Used > fs.Capacity || fs.InodesFree > fs.Inodes || fs.Time.IsZero() {
		t.Errorf("Statfs = %+v: inconsistent", fs)
	}
	if _, err := Statfs("/nonexistent/microlet"); err == nil {
		t.Error("Statfs of a missing path succeeded")
	}
}

// waitFor polls cond until it holds; the walker runs in the background.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func TestDiskUsageCache(t *testing.T) {
	dir := t.TempDir()
	writeFile(t, filepath.Join(dir, "data"), 20000)
	c := NewDiskUsageCache(time.Hour, hclog.NewNullLogger())
	t.Cleanup(c.Close)

	if got := c.Get(dir); got != nil {
		t.Fatalf("before the first walk: %+v, want nothing", got)
	}
	waitFor(t, "the first walk", func() bool { return c.Get(dir) != nil })
	first := c.Get(dir)
	if first.Inodes != 2 {
		t.Errorf("first walk: %+v, want the directory and its file", first)
	}

	// Within the period the tree is not walked again: new files do not show.
	writeFile(t, filepath.Join(dir, "more"), 20000)
	if got := c.Get(dir); got != first {
		t.Errorf("within the period: %+v, want the first walk's %+v", got, first)
	}
}

func TestDiskUsageCacheRefreshesAndForgetsRemovedTrees(t *testing.T) {
	dir := t.TempDir()
	tree := filepath.Join(dir, "volume")
	writeFile(t, filepath.Join(tree, "data"), 100)
	// A period this short makes every Get ask for a new walk.
	c := NewDiskUsageCache(time.Nanosecond, hclog.NewNullLogger())
	t.Cleanup(c.Close)

	waitFor(t, "the first walk", func() bool { return c.Get(tree) != nil })
	writeFile(t, filepath.Join(tree, "more"), 100)
	waitFor(t, "a walk that sees the new file", func() bool {
		u := c.Get(tree)
		return u != nil && u.Inodes == 3
	})
	if err := os.RemoveAll(tree); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a walk that finds the tree gone", func() bool { return c.Get(tree) == nil })
}
