package probes

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/pluginhost"
	"github.com/microlet/microlet/sdk/sdktest"
)

// installPlugin puts the built probes plugin into a new plugin directory
// the plugin host's trust checks accept (0755, the test's user's), removed
// when the test ends.
func installPlugin(t *testing.T) string {
	built := sdktest.BuildAs(t, "github.com/microlet/microlet/plugins/cmd/microlet-plugins", "microlet-probes-default")
	dir, err := os.MkdirTemp("", "microlet-probes-plugins-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.Open(built)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = src.Close() }()
	dst, err := os.OpenFile(filepath.Join(dir, "microlet-probes-default"), os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The prober on the plugin host's slot, with the plugin binary: a hot swap
// (a changed env) ends the session on the old process, the kept verdicts
// stand, and the new process probes what the prober asks.
func TestThroughThePluginHost(t *testing.T) {
	t.Parallel()
	port := readyServer(t)
	sockets := t.TempDir()
	if err := os.Chmod(sockets, 0o700); err != nil {
		t.Fatal(err)
	}
	host, err := pluginhost.New(pluginhost.Options{Dir: installPlugin(t), SocketDir: sockets, HostService: &execHost{calls: map[string]int{}}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := host.Close(ctx); err != nil {
			t.Errorf("closing the plugin host: %v", err)
		}
	})
	spec := pluginhost.Spec{Kind: "probes", Name: "default"}
	if err := host.Reconcile(t.Context(), []pluginhost.Spec{spec}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	m := newManager(t, Options{Plugin: host.Plugin("probes"), Registerer: prometheus.NewRegistry()})
	run(t, m)

	readiness := httpReadiness()
	readiness.PeriodSeconds, readiness.SuccessThreshold = 1, 2
	ports := []v1.ContainerPort{{Name: "web", ContainerPort: port}}
	pod := newPod("1",
		v1.Container{Name: "app", Image: "app", Ports: ports, ReadinessProbe: readiness},
		v1.Container{Name: "late", Image: "late", Ports: ports, ReadinessProbe: readiness})
	m.UpdatePod(pod, loopbackRuntime(pod, "app"))
	waitFor(t, m, Update{PodUID: pod.UID, ContainerID: "app-1", Type: Readiness, Result: Success})
	before := host.Plugin("probes").Status()

	spec.Env = map[string]string{"GENERATION": "2"}
	if err := host.Reconcile(t.Context(), []pluginhost.Spec{spec}); err != nil {
		t.Fatalf("Reconcile for a swap: %v", err)
	}
	after := host.Plugin("probes").Status()
	if after.Swaps != before.Swaps+1 || after.PID == before.PID {
		t.Fatalf("no swap: status before %+v, after %+v", before, after)
	}

	m.UpdatePod(pod, loopbackRuntime(pod, "app", "late"))
	seen := waitFor(t, m, Update{PodUID: pod.UID, ContainerID: "late-1", Type: Readiness, Result: Success})
	for _, u := range seen {
		if u.ContainerID == "app-1" {
			t.Errorf("update %+v across the swap; want app-1's verdict kept", u)
		}
	}
	if ready, _ := m.Ready("app-1"); !ready {
		t.Error("app-1 turned unready across the swap")
	}
}
