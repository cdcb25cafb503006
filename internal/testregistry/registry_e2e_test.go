//go:build e2e

package testregistry

import (
	"context"
	"errors"
	"io/fs"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/microlet/microlet/internal/devnode"
)

// TestPushAndAuth pushes an image, reads its manifest back with and
// without the right credentials, and checks that Close leaves neither the
// process nor its directory.
func TestPushAndAuth(t *testing.T) {
	r := StartT(t, map[string]string{"alice": "secret"})
	img := devnode.PauseImage("localhost/testregistry-pause:1")
	r.PushT(t, img, "e2e/pause:1", "alice", "secret")
	r.PushT(t, img, "e2e/pause:2", "alice", "secret") // blobs already there

	get := func(user, password string) error {
		_, err := r.do(context.Background(), http.MethodGet, "/v2/e2e/pause/manifests/2", "", nil, user, password, http.StatusOK)
		return err
	}
	if err := get("alice", "secret"); err != nil {
		t.Errorf("manifest with the right password: %v", err)
	}
	for _, creds := range [][2]string{{"alice", "wrong"}, {"", ""}, {"bob", "secret"}} {
		err := get(creds[0], creds[1])
		if err == nil || !strings.Contains(err.Error(), "401 Unauthorized") || !strings.Contains(err.Error(), "UNAUTHORIZED") {
			t.Errorf("manifest as %q/%q: %v, want 401 with the registry's UNAUTHORIZED", creds[0], creds[1], err)
		}
	}
	if err := r.Push(context.Background(), img, "e2e/pause:3", "alice", "wrong"); err == nil {
		t.Error("push with a wrong password succeeded")
	}

	pid, dir := r.PID, r.Dir
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("registry process %d after Close: kill(0) = %v, want ESRCH", pid, err)
	}
	if _, err := os.Stat(dir); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("registry directory after Close: %v", err)
	}
	r.proc, r.Dir = nil, "" // closed: the cleanup has nothing left to do
}
