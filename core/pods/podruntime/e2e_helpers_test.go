//go:build e2e

package podruntime_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/pods/podruntime"
	"github.com/microlet/microlet/core/pods/podspec"
	"github.com/microlet/microlet/core/runtime/container"
	"github.com/microlet/microlet/core/runtime/cri"
	"github.com/microlet/microlet/internal/devnode"
)

const (
	e2eNodeName = "node-e2e"
	// e2eTimeout bounds each wait of a test for the runtime.
	e2eTimeout = 90 * time.Second
	// syncInterval is how often syncUntil syncs, as a busy pod worker.
	syncInterval = 100 * time.Millisecond
)

// env is a private containerd and a runtime manager on it.
type env struct {
	t    *testing.T
	node *devnode.Node
	cri  *cri.Client
	m    *podruntime.Manager
	opts podruntime.Options
	// clockOffset moves the manager's clock forward, for backoffs.
	clockOffset atomic.Int64
}

func newEnv(t *testing.T) *env {
	t.Helper()
	// The directory outlives the node: its cleanup, registered first, runs
	// last, after the node stopped every container using it.
	dir := t.TempDir()
	node := devnode.StartT(t)
	log := hclog.New(&hclog.LoggerOptions{Name: "e2e", Level: hclog.Debug, Output: testLog{t}})
	ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
	defer cancel()
	client, err := cri.Connect(ctx, cri.Config{RuntimeEndpoint: node.Endpoint}, log)
	if err != nil {
		t.Fatalf("connecting to the node's CRI: %v", err)
	}
	t.Cleanup(func() { client.Close() })
	e := &env{t: t, node: node, cri: client}
	e.opts = podruntime.Options{
		CRI:              client,
		NodeName:         e2eNodeName,
		NodeIPs:          []string{"127.0.0.1"},
		RootDir:          dir + "/root",
		PodLogsDir:       dir + "/pods",
		ContainerLogsDir: dir + "/containers",
		DNS:              podruntime.DNSConfig{ClusterDNS: []string{"10.96.0.10"}, ClusterDomain: "cluster.local"},
		Logger:           log,
		Clock:            func() time.Time { return time.Now().Add(time.Duration(e.clockOffset.Load())) },
	}
	e.m = e.newManager()
	return e
}

// newManager makes a manager on the env's runtime and directories, as the
// core does when it starts.
func (e *env) newManager() *podruntime.Manager {
	e.t.Helper()
	m, err := podruntime.New(e.opts)
	if err != nil {
		e.t.Fatalf("podruntime.New: %v", err)
	}
	return m
}

// pod decodes a static pod manifest as the file source does and registers
// its removal: killed and cleaned up when the test ends.
func (e *env) pod(manifest string) *v1.Pod {
	e.t.Helper()
	manifest = strings.ReplaceAll(manifest, "IMAGE", e.node.TestImage)
	decoded, err := podspec.DecodePod([]byte(manifest))
	if err != nil {
		e.t.Fatalf("decoding the manifest: %v", err)
	}
	pod, err := decoded.Prepare(0, podspec.FileOrigin(e2eNodeName, "/etc/kubernetes/manifests/"+decoded.Pods[0].Name+".yaml"))
	if err != nil {
		e.t.Fatalf("preparing the pod: %v", err)
	}
	e.t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), e2eTimeout)
		defer cancel()
		zero := int64(0)
		if rp := e.runtimePod(ctx, pod); rp != nil {
			if err := e.m.KillPod(ctx, pod, rp, &zero); err != nil {
				e.t.Errorf("cleanup: killing %s: %v", pod.Name, err)
			}
		}
		if err := e.m.CleanupPod(ctx, pod.UID); err != nil {
			e.t.Errorf("cleanup: %v", err)
		}
	})
	return pod
}

// runtimePod is the runtime's listing of pod, nil when it has nothing.
func (e *env) runtimePod(ctx context.Context, pod *v1.Pod) *container.Pod {
	e.t.Helper()
	pods, err := e.m.ListPods(ctx)
	if err != nil {
		e.t.Fatalf("ListPods: %v", err)
	}
	for _, p := range pods {
		if p.UID == pod.UID {
			return p
		}
	}
	return nil
}

func (e *env) status(ctx context.Context, pod *v1.Pod) *container.PodStatus {
	e.t.Helper()
	s, err := e.m.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		e.t.Fatalf("GetPodStatus: %v", err)
	}
	return s
}

// syncUntil syncs the pod as its pod worker would, until done holds for its
// status, and returns that status and the results of the syncs.
func (e *env) syncUntil(ctx context.Context, pod *v1.Pod, probes podruntime.ProbeResults, what string, done func(*container.PodStatus) bool) (*container.PodStatus, []*podruntime.SyncResult) {
	e.t.Helper()
	var results []*podruntime.SyncResult
	deadline := time.Now().Add(e2eTimeout)
	for {
		s := e.status(ctx, pod)
		if done(s) {
			return s, results
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("pod %s: %s did not happen within %v; last status %s; last sync %v", pod.Name, what, e2eTimeout, describe(s), lastErr(results))
		}
		results = append(results, e.m.SyncPod(ctx, pod, s, probes))
		time.Sleep(syncInterval)
	}
}

// waitFor polls the pod's status without syncing until done holds.
func (e *env) waitFor(ctx context.Context, pod *v1.Pod, what string, done func(*container.PodStatus) bool) *container.PodStatus {
	e.t.Helper()
	deadline := time.Now().Add(e2eTimeout)
	for {
		s := e.status(ctx, pod)
		if done(s) {
			return s
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("pod %s: %s did not happen within %v; last status %s", pod.Name, what, e2eTimeout, describe(s))
		}
		time.Sleep(syncInterval)
	}
}

func lastErr(results []*podruntime.SyncResult) error {
	if len(results) == 0 {
		return nil
	}
	return results[len(results)-1].Err()
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// Conditions on a pod's status.

func running(names ...string) func(*container.PodStatus) bool {
	return func(s *container.PodStatus) bool {
		for _, n := range names {
			if c := s.Container(n); c == nil || c.State != container.StateRunning {
				return false
			}
		}
		return true
	}
}

func exited(names ...string) func(*container.PodStatus) bool {
	return func(s *container.PodStatus) bool {
		for _, n := range names {
			if c := s.Container(n); c == nil || c.State != container.StateExited {
				return false
			}
		}
		return true
	}
}

// instances counts a container's instances.
func instances(s *container.PodStatus, name string) int {
	n := 0
	for _, c := range s.Containers {
		if c.Name == name {
			n++
		}
	}
	return n
}

func describe(s *container.PodStatus) string {
	var b strings.Builder
	for _, sb := range s.Sandboxes {
		fmt.Fprintf(&b, "[sandbox %.12s %s attempt %d ips %v] ", sb.ID, sb.State, sb.Attempt, sb.IPs)
	}
	for _, c := range s.Containers {
		fmt.Fprintf(&b, "[%s %.12s %s exit %d restarts %d %s] ", c.Name, c.ID, c.State, c.ExitCode, c.RestartCount, c.Message)
	}
	return b.String()
}

// testLog sends log lines to the test's log.
type testLog struct{ t *testing.T }

func (w testLog) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// failedSteps lists a sync's failed steps as "Action Target Reason".
func failedSteps(r *podruntime.SyncResult) []string {
	var out []string
	for _, s := range r.Steps {
		if s.Err != nil {
			out = append(out, s.Action+" "+s.Target+" "+s.Reason)
		}
	}
	return out
}
