package devices

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/pluginhost"
	"github.com/microlet/microlet/sdk/sdktest"
)

// installHostdev puts the built hostdev plugin into a new plugin directory
// that the plugin host's trust checks accept (0755, the test's user's).
func installHostdev(t *testing.T) string {
	t.Helper()
	built, err := os.ReadFile(sdktest.BuildAs(t, "github.com/microlet/microlet/plugins/cmd/microlet-plugins", "microlet-devices-hostdev"))
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp("", "microlet-devices-plugins-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "microlet-devices-hostdev"), built, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// The manager on the plugin host with the real hostdev binary: /dev/null
// offered as a resource, allocated, handed to the container; a hot swap of
// the plugin's config is followed; removing the plugin leaves its
// resource unhealthy.
func TestThroughThePluginHost(t *testing.T) {
	sockets, err := os.MkdirTemp("", "microlet-devices-sockets-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(sockets) })
	host, err := pluginhost.New(pluginhost.Options{Dir: installHostdev(t), SocketDir: sockets})
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
	spec := func(permissions string) []pluginhost.Spec {
		return []pluginhost.Spec{{Kind: pluginhost.Devices, Name: "hostdev", Config: map[string]any{
			"resources": []any{map[string]any{"name": "microlet.dev/null", "paths": []any{"/dev/null"}, "permissions": permissions}},
		}}}
	}
	if err := host.Reconcile(t.Context(), spec("rw")); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	m, err := New(Options{Plugins: HostSlots(host), RootDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	run(t, m)
	offers(t, m, "microlet.dev/null", 1, 1)

	pod := newPod("1", container("app", "microlet.dev/null", 1))
	if got := m.Admit(t.Context(), pod, nil); !got.Admit {
		t.Fatalf("Admit = %+v", got)
	}
	opts, err := m.ContainerOptions(t.Context(), pod, &pod.Spec.Containers[0])
	if err != nil || len(opts.Devices) != 1 || opts.Devices[0].GetHostPath() != "/dev/null" || opts.Devices[0].GetPermissions() != "rw" {
		t.Fatalf("ContainerOptions = %+v, %v; want /dev/null with rw", opts, err)
	}
	if err := m.Release(t.Context(), pod); err != nil {
		t.Fatal(err)
	}

	// A changed config is a hot swap: the new process serves the next
	// allocation.
	if err := host.Reconcile(t.Context(), spec("r")); err != nil {
		t.Fatalf("Reconcile (swap): %v", err)
	}
	next := newPod("2", container("app", "microlet.dev/null", 1))
	eventually(t, "an allocation by the swapped-in process", func() bool {
		if got := m.Admit(t.Context(), next, nil); !got.Admit {
			return false
		}
		opts, err := m.ContainerOptions(t.Context(), next, &next.Spec.Containers[0])
		if err != nil {
			t.Fatal(err)
		}
		if opts.Devices[0].GetPermissions() == "r" {
			return true
		}
		if err := m.Release(t.Context(), next); err != nil {
			t.Fatal(err)
		}
		return false
	})

	if err := host.Reconcile(t.Context(), nil); err != nil {
		t.Fatalf("Reconcile (remove): %v", err)
	}
	offers(t, m, "microlet.dev/null", 1, 0)
	if _, known := m.Allocatable()[v1.ResourceName("microlet.dev/null")]; !known {
		t.Error("the removed plugin's resource vanished before its grace period")
	}
}
