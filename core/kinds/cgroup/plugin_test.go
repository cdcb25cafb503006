package cgroup

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/microlet/microlet/core/pluginhost"
	"github.com/microlet/microlet/sdk/sdktest"
)

// The shipped plugin binary behind the real plugin host: absent until
// configured, then planning, then absent again when the config drops it.
func TestHostPlugin(t *testing.T) {
	dir, err := os.MkdirTemp("", "microlet-plugins-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil { // the trust checks want it so
		t.Fatal(err)
	}
	install(t, sdktest.BuildAs(t, "github.com/microlet/microlet/plugins/cmd/microlet-plugins", "microlet-cgroup-default"), filepath.Join(dir, "microlet-cgroup-default"))
	host, err := pluginhost.New(pluginhost.Options{Dir: dir, SocketDir: filepath.Join(t.TempDir(), "sockets"), Logger: hclog.NewNullLogger()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// t.Context() has ended by now.
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		if err := host.Close(ctx); err != nil {
			t.Errorf("close the plugin host: %v", err)
		}
	})

	cg := fakeV2Tree(t, "/kubepods", "/kubepods/burstable", "/kubepods/besteffort")
	m, err := New(Options{Plugin: HostPlugin(host), Capacity: testCapacity(), Cgroups: cg, Logger: testLogger(t, &logBuffer{})})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if plan, err := m.PlanPod(ctx, guaranteed("a", "1", "1Gi")); err != nil || plan.CgroupParent != "" {
		t.Errorf("PlanPod with no plugin configured = %+v, %v; want an empty plan", plan, err)
	}

	spec := pluginhost.Spec{Kind: pluginhost.Cgroup, Name: "default", Config: map[string]any{"cpu_cfs_quota_period": "50ms"}}
	if err := host.Reconcile(ctx, []pluginhost.Spec{spec}); err != nil {
		t.Fatal(err)
	}
	plan, err := m.PlanPod(ctx, guaranteed("b", "1", "1Gi"))
	if err != nil || plan.CgroupParent != "/kubepods/podb" || plan.Containers["c0"].GetCpuPeriod() != 50000 {
		t.Errorf("PlanPod through the host = %+v, %v", plan, err)
	}

	if err := host.Reconcile(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if err := HostPlugin(host).Call(ctx, nil); !errors.Is(err, pluginhost.ErrNotConfigured) {
		t.Errorf("Call after the plugin was removed = %v, want ErrNotConfigured", err)
	}
}

// install copies a binary into the plugin directory, mode 0755.
func install(t *testing.T, from, to string) {
	t.Helper()
	src, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	dst, err := os.OpenFile(to, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o755)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(dst, src); err != nil {
		t.Fatal(err)
	}
	if err := dst.Close(); err != nil {
		t.Fatal(err)
	}
}
