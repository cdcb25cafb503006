package podruntime

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRestartCountFromLogDir(t *testing.T) {
	dir := t.TempDir()
	if n, err := restartCountFromLogDir(filepath.Join(dir, "missing")); n != 0 || err != nil {
		t.Errorf("missing directory: %d, %v", n, err)
	}
	for _, name := range []string{"0.log", "3.log.20240501-100000", "1.log", "notes.txt", "99999999999999999999999.log"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "7.log"), 0o755); err != nil {
		t.Fatal(err)
	}
	if n, err := restartCountFromLogDir(dir); n != 4 || err != nil {
		t.Errorf("restartCountFromLogDir = %d, %v; want 4 (after the rotated 3.log)", n, err)
	}
}

func TestContainerLogSymlinks(t *testing.T) {
	m := newTestManager(t)
	link := m.containerLogSymlink("web", "default", "app", "abc123")
	if want := filepath.Join(m.opts.ContainerLogsDir, "web_default_app-abc123.log"); link != want {
		t.Errorf("symlink %s, want %s", link, want)
	}
	long := m.containerLogSymlink(strings.Repeat("p", 200), "default", "app", strings.Repeat("f", 64))
	if name := filepath.Base(long); len(name) != 255 || !strings.HasSuffix(name, ".log") {
		t.Errorf("long symlink name of %d bytes: %s", len(name), name)
	}

	// Links into this pod's logs go, others stay.
	mine := filepath.Join(m.opts.PodLogsDir, "default_web_uid-1", "app", "0.log")
	theirs := filepath.Join(m.opts.PodLogsDir, "default_web_uid-10", "app", "0.log")
	for link, target := range map[string]string{"mine.log": mine, "theirs.log": theirs, "outside.log": "/var/log/syslog"} {
		if err := os.Symlink(target, filepath.Join(m.opts.ContainerLogsDir, link)); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(m.opts.ContainerLogsDir, "regular.log"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := m.unlinkPodLogs("uid-1"); err != nil {
		t.Fatal(err)
	}
	for name, wantGone := range map[string]bool{"mine.log": true, "theirs.log": false, "outside.log": false, "regular.log": false} {
		_, err := os.Lstat(filepath.Join(m.opts.ContainerLogsDir, name))
		if gone := errors.Is(err, os.ErrNotExist); gone != wantGone {
			t.Errorf("%s removed: %v, want %v", name, gone, wantGone)
		}
	}
}
