package e2e

import (
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"os"
	"sync"
	"testing"

	"github.com/microlet/microlet/internal/devnode"
	"github.com/microlet/microlet/internal/lastresort"
)

// ShortTempDir is a new directory under the system's temp dir, removed
// after the test. t.TempDir's paths carry the test's name, and sockets
// under them (plugins', the push socket) would pass the 108 bytes a unix
// socket path may have.
func ShortTempDir(t testing.TB) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mle2e-")
	if err != nil {
		t.Fatal(err)
	}
	// The watchdog runs no cleanup of the harness that unmounts what a
	// core mounted below (pods' volumes), so it unmounts first itself.
	unregister := lastresort.Register("directory "+dir, func() error {
		if err := devnode.UnmountUnder(dir); err != nil {
			return err // RemoveAll would descend into the mounts
		}
		return os.RemoveAll(dir)
	})
	t.Cleanup(func() {
		defer unregister()
		if err := os.RemoveAll(dir); err != nil {
			t.Errorf("removing %s: %v", dir, err)
		}
	})
	return dir
}

// RandomHex is n random bytes in hex: names no other run uses.
func RandomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}

// SyncBuffer is a log sink safe for concurrent writers.
type SyncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *SyncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *SyncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
