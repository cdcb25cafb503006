package devnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// StartT starts a node for a test or benchmark and closes it in
// t.Cleanup, failing the test if anything was left behind. It skips the
// test when not running as root, or when containerd, runc, the CNI plugins
// or busybox-static are missing and cannot be installed (fails it under
// CI=true, SkipOrFail). Pass at most one
// Options; the default logger writes to the test's log.
func StartT(t testing.TB, opts ...Options) *Node {
	t.Helper()
	if len(opts) > 1 {
		t.Fatalf("devnode.StartT: got %d Options, want at most one", len(opts))
	}
	if os.Geteuid() != 0 {
		SkipOrFail(t, "devnode: needs root (containerd, runc, CNI, mounts, network namespaces)")
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
		SkipOrFail(t, "devnode: %v", err)
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

// CgroupT creates a cgroup root of the test's own, /<prefix>-<pid>-<n>, in
// every hierarchy, and removes it in t.Cleanup. Call it before StartT:
// cleanups run last-in first-out, so the root goes after the node's Close
// has stopped every pod in it.
func CgroupT(t testing.TB, prefix string) string {
	t.Helper()
	root := fmt.Sprintf("/%s-%d-%d", prefix, os.Getpid(), cgroupSeq.Add(1))
	t.Cleanup(func() {
		if err := RemoveCgroup(root); err != nil {
			t.Errorf("removing the cgroup root %s: %v", root, err)
		}
	})
	if err := CreateCgroup(root); err != nil {
		t.Fatal(err)
	}
	return root
}

// cgroupSeq tells apart the cgroup roots of one test process.
var cgroupSeq atomic.Int64
