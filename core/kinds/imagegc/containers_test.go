package imagegc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/microlet/microlet/core/pluginhost"
	imagegcv1 "github.com/microlet/microlet/proto/microlet/imagegc/v1"
)

const (
	running  = runtimeapi.ContainerState_CONTAINER_RUNNING
	exited   = runtimeapi.ContainerState_CONTAINER_EXITED
	ready    = runtimeapi.PodSandboxState_SANDBOX_READY
	notReady = runtimeapi.PodSandboxState_SANDBOX_NOTREADY
)

// node is a runtime with two pods, and their logs on disk:
//   - "live" (wanted): sandbox live-sb1 ready with container app running,
//     two dead instances of app (app-0 older than app-1), and an older
//     sandbox live-sb0, not ready and empty;
//   - "gone" (deleted): sandbox gone-sb not ready, with dead container
//     gone-app.
type node struct {
	rt                     *fakeRuntime
	podLogs, containerLogs string
	// logs by container ID.
	logs map[string]string
	// goneLogDir is the deleted pod's log directory.
	goneLogDir string
}

func newNode(t *testing.T) *node {
	t.Helper()
	dir := t.TempDir()
	n := &node{podLogs: filepath.Join(dir, "pods"), containerLogs: filepath.Join(dir, "containers"), logs: map[string]string{}}
	at := func(minutes int) time.Time { return epoch.Add(time.Duration(minutes) * time.Minute) }
	n.rt = &fakeRuntime{
		containers: []*runtimeapi.Container{
			container("app-2", "live-sb1", "live", "app", running, at(-1), "localhost/busybox:1"),
			container("app-1", "live-sb1", "live", "app", exited, at(-5), "localhost/busybox:1"),
			container("app-0", "live-sb1", "live", "app", exited, at(-9), "localhost/busybox:1"),
			container("gone-app", "gone-sb", "gone", "app", exited, at(-3), "localhost/busybox:1"),
			// Not the core's: no pod labels.
			{Id: "foreign", State: exited, CreatedAt: at(-60).UnixNano()},
		},
		sandboxes: []*runtimeapi.PodSandbox{
			sandbox("live-sb1", "live", ready, at(-10)),
			sandbox("live-sb0", "live", notReady, at(-20)),
			sandbox("gone-sb", "gone", notReady, at(-4)),
		},
		logPaths: map[string]string{},
	}
	liveDir := filepath.Join(n.podLogs, "default_pod-live_live")
	n.goneLogDir = filepath.Join(n.podLogs, "default_pod-gone_gone")
	for id, path := range map[string]string{
		"app-2":    filepath.Join(liveDir, "app", "2.log"),
		"app-1":    filepath.Join(liveDir, "app", "1.log"),
		"app-0":    filepath.Join(liveDir, "app", "0.log"),
		"gone-app": filepath.Join(n.goneLogDir, "app", "0.log"),
	} {
		n.logs[id] = path
		n.rt.logPaths[id] = path
		writeFile(t, path)
		for _, rotation := range rotations(path) {
			writeFile(t, rotation)
		}
		link := filepath.Join(n.containerLogs, id+".log")
		if err := os.MkdirAll(n.containerLogs, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(path, link); err != nil {
			t.Fatal(err)
		}
	}
	return n
}

// rotations are what log rotation leaves beside a live log.
func rotations(path string) []string {
	return []string{path + ".20260101-000000.gz", path + ".20260101-000001"}
}

func writeFile(t *testing.T, path string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte("log\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func TestContainerGC(t *testing.T) {
	for _, tc := range []struct {
		name      string
		removeAll bool
		// Container and sandbox IDs removed, in order.
		containers, sandboxes []string
		// Logs (by container ID) left on disk.
		logsLeft []string
	}{
		{
			name: "the kubelet's limits: one dead instance kept per container, deleted pods go whole",
			// app-0 is beyond max_per_pod_container = 1; the deleted pod's
			// container and sandbox go. live-sb0 is the newest of the live
			// pod's not-ready sandboxes (the only ones the core sends), so
			// it stays.
			containers: []string{"app-0", "gone-app"},
			sandboxes:  []string{"gone-sb"},
			logsLeft:   []string{"app-2", "app-1"},
		},
		{
			// Every dead container goes; the live pod still keeps its
			// newest not-ready sandbox.
			name:       "remove all, for node-level reclaim",
			removeAll:  true,
			containers: []string{"app-0", "app-1", "gone-app"},
			sandboxes:  []string{"gone-sb"},
			logsLeft:   []string{"app-2"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t)
			plugin := lruPlugin(t, map[string]any{})
			m := newManager(t, n.rt, plugin, deletedPods{"gone"}, clocktesting.NewFakePassiveClock(epoch), n.podLogs, n.containerLogs)
			if err := m.CollectContainers(context.Background(), tc.removeAll); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(n.rt.removedContainers, tc.containers) {
				t.Errorf("removed containers %v, want %v", n.rt.removedContainers, tc.containers)
			}
			if !slices.Equal(n.rt.removedSandboxes, tc.sandboxes) {
				t.Errorf("removed sandboxes %v, want %v", n.rt.removedSandboxes, tc.sandboxes)
			}
			for id, path := range n.logs {
				want := slices.Contains(tc.logsLeft, id)
				if exists(path) != want {
					t.Errorf("log of %s (%s) exists = %t, want %t", id, path, exists(path), want)
				}
				for _, rotation := range rotations(path) {
					if exists(rotation) != want {
						t.Errorf("rotated log of %s (%s) exists = %t, want %t", id, rotation, exists(rotation), want)
					}
				}
				if link := filepath.Join(n.containerLogs, id+".log"); exists(link) != want {
					t.Errorf("symlink of %s exists = %t, want %t", id, exists(link), want)
				}
			}
			if exists(n.goneLogDir) {
				t.Errorf("the deleted pod's log directory %s is still there", n.goneLogDir)
			}
		})
	}
}

// TestContainerGCKeepsWhatTheCoreDidNotOffer: a plan naming a running
// container, a ready sandbox or an unknown ID removes none of them.
func TestContainerGCKeepsWhatTheCoreDidNotOffer(t *testing.T) {
	n := newNode(t)
	plugin := fixedPlanPlugin(t, &imagegcv1.PlanContainerGCResponse{
		RemoveContainerIds: []string{"app-2", "made-up", "app-0"},
		RemoveSandboxIds:   []string{"live-sb1", "gone-sb"},
	})
	m := newManager(t, n.rt, plugin, deletedPods{}, clocktesting.NewFakePassiveClock(epoch), n.podLogs, n.containerLogs)
	err := m.CollectContainers(context.Background(), false)
	for _, id := range []string{`"app-2"`, `"made-up"`, `"live-sb1"`} {
		if err == nil || !strings.Contains(err.Error(), id) {
			t.Errorf("error %v does not name %s, which was refused", err, id)
		}
	}
	if want := []string{"app-0"}; !slices.Equal(n.rt.removedContainers, want) {
		t.Errorf("removed containers %v, want %v", n.rt.removedContainers, want)
	}
	if want := []string{"gone-sb"}; !slices.Equal(n.rt.removedSandboxes, want) {
		t.Errorf("removed sandboxes %v, want %v", n.rt.removedSandboxes, want)
	}
	if !exists(n.goneLogDir) {
		t.Error("the log directory of a pod that is not deleted was removed")
	}
}

func TestContainerGCWithoutPlugin(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
	}{
		{"not configured", fmt.Errorf("no imagegc plugin is configured: %w", pluginhost.ErrNotConfigured)},
		{"restarting", fmt.Errorf("%w: plugin imagegc/lru is restarting", pluginhost.ErrUnavailable)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := newNode(t)
			m := newManager(t, n.rt, downPlugin{tc.err}, deletedPods{"gone"}, clocktesting.NewFakePassiveClock(epoch), n.podLogs, n.containerLogs)
			err := m.CollectContainers(context.Background(), true)
			if !errors.Is(err, pluginhost.ErrUnavailable) {
				t.Errorf("error %v, want one wrapping pluginhost.ErrUnavailable", err)
			}
			if len(n.rt.removedContainers)+len(n.rt.removedSandboxes) > 0 || !exists(n.goneLogDir) {
				t.Errorf("removed %v and %v without a plan", n.rt.removedContainers, n.rt.removedSandboxes)
			}
		})
	}
}

func TestPodUIDFromLogDir(t *testing.T) {
	for name, want := range map[string]string{
		"default_web_0b6f1c2e-1111-2222-3333-444455556666": "0b6f1c2e-1111-2222-3333-444455556666",
		"kube-system_etcd-node_abc":                        "abc",
		"not-a-pod-dir":                                    "",
		"too_many_parts_here":                              "",
		"ns_name_":                                         "",
	} {
		if got := podUIDFromLogDir(name); got != want {
			t.Errorf("podUIDFromLogDir(%q) = %q, want %q", name, got, want)
		}
	}
}

func TestInPodLogsDir(t *testing.T) {
	m := &Manager{opts: Options{PodLogsDir: "/var/log/pods"}}
	for path, want := range map[string]bool{
		"/var/log/pods/ns_a_1/app/0.log": true,
		"/var/log/pods/ns_a_1":           true,
		"/var/log/pods":                  false,
		"/var/log/pods/../messages":      false,
		"/var/log/podsX/a":               false,
		"/var/log/pods/..data":           true,
		"relative/path":                  false,
	} {
		if got := m.inPodLogsDir(path); got != want {
			t.Errorf("inPodLogsDir(%q) = %t, want %t", path, got, want)
		}
	}
}
