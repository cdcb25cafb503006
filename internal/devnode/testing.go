package devnode

import (
	"context"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// StartT starts a node for a test or benchmark and closes it in
// t.Cleanup, failing the test if anything was left behind. It skips the
// test when not running as root, or when containerd, runc, the CNI plugins
// or busybox-static are missing and cannot be installed. Pass at most one
// Options; the default logger writes to the test's log.
func StartT(t testing.TB, opts ...Options) *Node {
	t.Helper()
	if len(opts) > 1 {
		t.Fatalf("devnode.StartT: got %d Options, want at most one", len(opts))
	}
	if os.Geteuid() != 0 {
		t.Skip("devnode: needs root (containerd, runc, CNI, mounts, network namespaces)")
	}
	var o Options
	if len(opts) == 1 {
		o = opts[0]
	}
	if o.Logger == nil {
		o.Logger = hclog.New(&hclog.LoggerOptions{Name: "devnode", Level: hclog.Info, Output: testWriter{t}})
	}
	n, err := Start(context.Background(), o)
	if errors.Is(err, ErrPrerequisites) {
		t.Skipf("devnode: %v", err)
	}
	if err != nil {
		t.Fatalf("devnode: %v", err)
	}
	t.Cleanup(func() {
		if err := n.Close(); err != nil {
			t.Errorf("devnode: close: %v", err)
		}
	})
	return n
}

// testWriter sends log lines to the test's log.
type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Helper()
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
