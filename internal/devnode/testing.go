package devnode

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/microlet/microlet/internal/lastresort"
	"github.com/microlet/microlet/internal/prereq"
)

// StartT starts a node for a test or benchmark and closes it in
// t.Cleanup, failing the test if anything was left behind. It skips the
// test, or fails it under CI (internal/prereq), when not running as root,
// or when containerd, runc, the CNI plugins or busybox-static are missing
// and cannot be installed. Pass at most one
// Options; the default logger writes to the test's log.
func StartT(t testing.TB, opts ...Options) *Node {
	t.Helper()
	if len(opts) > 1 {
		t.Fatalf("devnode.StartT: got %d Options, want at most one", len(opts))
	}
	prereq.Root(t, "devnode runs containerd, runc and CNI, and makes mounts and network namespaces")
	var o Options
	if len(opts) == 1 {
		o = opts[0]
	}
	if o.Logger == nil {
		o.Logger = hclog.New(&hclog.LoggerOptions{Name: "devnode", Level: hclog.Info, Output: testWriter{t}})
	}
	n, err := Start(context.Background(), o)
	if errors.Is(err, ErrPrerequisites) {
		prereq.Missing(t, "devnode: %v", err)
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
	unregister := lastresort.Register("cgroup root "+root, func() error { return RemoveCgroup(root) })
	t.Cleanup(func() {
		defer unregister()
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

// StartKubeletT starts a kubelet on node (StartKubelet) for a test or
// benchmark, waiting at most timeout for the host's one kubelet slot and
// the start, and closes it in t.Cleanup, before node's Close if StartT
// came first.
func StartKubeletT(t testing.TB, node *Node, timeout time.Duration, opts KubeletOptions) *Kubelet {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	k, err := StartKubelet(ctx, node, opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := k.Close(); err != nil {
			t.Errorf("kubelet: %v", err)
		}
	})
	return k
}

// ColdKubeletBinaryT returns the default kubelet binary (KubeletOptions.Binary)
// dropped from the page cache (DropFromPageCache), so that a kubelet
// started from it maps its code as on a node just booted: for benchmarks
// that weigh its memory against microlet's.
func ColdKubeletBinaryT(t testing.TB) string {
	t.Helper()
	bin, err := kubeletBinary("")
	if err != nil {
		t.Fatal(err)
	}
	if err := DropFromPageCache(bin); err != nil {
		t.Fatal(err)
	}
	return bin
}
