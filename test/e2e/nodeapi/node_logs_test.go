//go:build e2e

package nodeapie2e

import (
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// TestNodeLogsServeRegularFilesOnly plants what a hostile writer of
// node_log_dir could: a FIFO (whose open blocks a thread until a writer
// comes), a device node and a hard link to a file outside the directory.
// /logs/ refuses each at once, and still serves plain files and listings.
func TestNodeLogsServeRegularFilesOnly(t *testing.T) {
	n := startAPINode(t, nodeOptions{})
	secret := filepath.Join(filepath.Dir(n.NodeLogs), "shadow")
	if err := os.WriteFile(secret, []byte("TOP-SECRET\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Link(secret, filepath.Join(n.NodeLogs, "linked.log")); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(filepath.Join(n.NodeLogs, "fifo.log"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mknod(filepath.Join(n.NodeLogs, "null.log"), unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(n.NodeLogs, "plain.log"), []byte("plain line\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	// Several times: before the fix each request held a thread in open(2).
	for range 3 {
		for _, path := range []string{"/logs/fifo.log", "/logs/null.log", "/logs/linked.log"} {
			if code, body := n.GetWithin(10*time.Second, path); code != http.StatusForbidden || strings.Contains(body, "TOP-SECRET") {
				t.Errorf("GET %s = %d %q, want 403", path, code, body)
			}
		}
	}
	if code, body := n.GetWithin(10*time.Second, "/logs/plain.log"); code != 200 || body != "plain line\n" {
		t.Errorf("GET /logs/plain.log = %d %q", code, body)
	}
	if code, body := n.GetWithin(10*time.Second, "/logs/"); code != 200 || !strings.Contains(body, "plain.log") {
		t.Errorf("GET /logs/ = %d %q", code, body)
	}
}
