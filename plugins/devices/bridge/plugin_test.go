package bridge

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	devicesv1 "github.com/microlet/microlet/proto/microlet/devices/v1"
)

const gpu = "example.com/gpu"

// Registration is checked as upstream checks it; a registered plugin's
// resource reaches the core with its devices and options, and the core's
// calls reach the plugin.
func TestRegistrationAndCalls(t *testing.T) {
	dir := socketDir(t)
	b := startBridge(t, dir, EndpointStopGracePeriod)
	options := &pluginapi.DevicePluginOptions{PreStartRequired: true, GetPreferredAllocationAvailable: true}
	f := startFake(t, dir, "gpu.sock", options, healthy("gpu-0", "gpu-1"))

	for _, tc := range []struct {
		name, resource, version, endpoint, wantErr string
	}{
		{name: "version", resource: gpu, version: "v1alpha", wantErr: `requested API version "v1alpha" is not supported by kubelet. Supported version is ["v1beta1"]`},
		{name: "resource name", resource: "gpu", version: pluginapi.Version, wantErr: `the ResourceName "gpu" is invalid: "gpu" has no domain`},
		{name: "native resource", resource: "kubernetes.io/gpu", version: pluginapi.Version, wantErr: `the ResourceName "kubernetes.io/gpu" is invalid`},
		{name: "endpoint outside the directory", resource: gpu, version: pluginapi.Version, endpoint: "../gpu.sock", wantErr: `the endpoint "../gpu.sock" must be the name of a socket in`},
		{name: "nobody listens", resource: gpu, version: pluginapi.Version, endpoint: "absent.sock", wantErr: "failed to get device plugin options from"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			endpoint := tc.endpoint
			if endpoint == "" {
				endpoint = filepath.Base(f.socket)
			}
			err := registerRequest(t, dir, &pluginapi.RegisterRequest{Version: tc.version, Endpoint: endpoint, ResourceName: tc.resource})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Errorf("Register = %v, want an error containing %q", err, tc.wantErr)
			}
		})
	}

	if err := f.register(t, dir, gpu, pluginapi.Version); err != nil {
		t.Fatalf("Register: %v", err)
	}
	rs := b.waitFor(t, "the registered resource", func(rs []*devicesv1.Resource) bool { return find(rs, gpu) != nil })
	want := &devicesv1.Resource{Name: gpu, PreStartRequired: true, PreferredAllocationAvailable: true,
		Devices: []*devicesv1.Device{{Id: "gpu-0", Healthy: true}, {Id: "gpu-1", Healthy: true}}}
	if len(rs) != 1 || !proto.Equal(rs[0], want) {
		t.Fatalf("resources %v, want only %v", rs, want)
	}

	preferred, err := b.h.Devices().GetPreferredAllocation(t.Context(), &devicesv1.GetPreferredAllocationRequest{ResourceName: gpu,
		Containers: []*devicesv1.ContainerPreferredAllocationRequest{{AvailableDeviceIds: []string{"gpu-0", "gpu-1"}, AllocationSize: 1}}})
	if err != nil || !proto.Equal(preferred, &devicesv1.GetPreferredAllocationResponse{Containers: []*devicesv1.ContainerPreferredAllocationResponse{{DeviceIds: []string{"gpu-1"}}}}) {
		t.Errorf("GetPreferredAllocation = %v, %v; want gpu-1", preferred, err)
	}

	alloc, err := b.h.Devices().Allocate(t.Context(), &devicesv1.AllocateRequest{ResourceName: gpu, PodUid: "pod-1",
		Containers: []*devicesv1.ContainerAllocateRequest{{DeviceIds: []string{"gpu-1"}}}})
	if err != nil {
		t.Fatalf("Allocate: %v", err)
	}
	wantAlloc := &devicesv1.AllocateResponse{Containers: []*devicesv1.ContainerAllocateResponse{{
		Envs:        map[string]string{"FAKE_DEVICES": "gpu-1"},
		Mounts:      []*devicesv1.Mount{{ContainerPath: "/run/gpu-1", HostPath: "/tmp/gpu-1", ReadOnly: true}},
		Devices:     []*devicesv1.DeviceSpec{{ContainerPath: "/dev/gpu-1", HostPath: "/dev/gpu-1", Permissions: "rw"}},
		Annotations: map[string]string{"fake": "yes"},
		CdiDevices:  []string{"example.com/fake=gpu-1"},
	}}}
	if !proto.Equal(alloc, wantAlloc) {
		t.Errorf("Allocate = %v, want %v", alloc, wantAlloc)
	}

	if _, err := b.h.Devices().PreStartContainer(t.Context(), &devicesv1.PreStartContainerRequest{ResourceName: gpu, DeviceIds: []string{"gpu-1"}}); err != nil {
		t.Errorf("PreStartContainer: %v", err)
	}
	f.mu.Lock()
	if len(f.preStarts) != 1 || f.preStarts[0].GetDevicesIds()[0] != "gpu-1" {
		t.Errorf("the plugin got PreStartContainer %v, want one for gpu-1", f.preStarts)
	}
	f.mu.Unlock()

	if _, err := b.h.Devices().Allocate(t.Context(), &devicesv1.AllocateRequest{ResourceName: "example.com/other",
		Containers: []*devicesv1.ContainerAllocateRequest{{DeviceIds: []string{"x"}}}}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("Allocate of an unregistered resource: %v, want INVALID_ARGUMENT", err)
	}

	// Health changes reach the core.
	f.update([]*pluginapi.Device{{ID: "gpu-0", Health: pluginapi.Healthy}, {ID: "gpu-1", Health: pluginapi.Unhealthy,
		Topology: &pluginapi.TopologyInfo{Nodes: []*pluginapi.NUMANode{{ID: 1}}}}})
	rs = b.waitFor(t, "gpu-1 unhealthy", func(rs []*devicesv1.Resource) bool {
		health := healthOf(find(rs, gpu))
		return health["gpu-0"] && !health["gpu-1"]
	})
	if d := find(rs, gpu).GetDevices()[1]; len(d.GetNumaNodes()) != 1 || d.GetNumaNodes()[0] != 1 {
		t.Errorf("device %v, want NUMA node 1", d)
	}

	if err := b.h.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, "kubelet.sock")); !os.IsNotExist(err) {
		t.Errorf("kubelet.sock after Shutdown: %v, want it removed", err)
	}
}

// A second registration of a resource replaces the first plugin; the first
// one stopping then changes nothing.
func TestReRegistration(t *testing.T) {
	dir := socketDir(t)
	b := startBridge(t, dir, EndpointStopGracePeriod)
	first := startFake(t, dir, "first.sock", &pluginapi.DevicePluginOptions{}, healthy("a"))
	if err := first.register(t, dir, gpu, pluginapi.Version); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the first plugin's device", func(rs []*devicesv1.Resource) bool { return healthOf(find(rs, gpu))["a"] })

	second := startFake(t, dir, "second.sock", &pluginapi.DevicePluginOptions{}, healthy("b", "c"))
	if err := second.register(t, dir, gpu, pluginapi.Version); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the second plugin's devices only", func(rs []*devicesv1.Resource) bool {
		return maps.Equal(healthOf(find(rs, gpu)), map[string]bool{"b": true, "c": true})
	})
	// The replaced plugin's stream ended at the re-registration; that
	// must not make the resource unhealthy.
	second.update(healthy("b", "c", "d"))
	b.waitFor(t, "the second plugin's update", func(rs []*devicesv1.Resource) bool {
		for id, ok := range healthOf(find(rs, gpu)) {
			if !ok {
				t.Errorf("device %s unhealthy after a re-registration", id)
			}
		}
		return healthOf(find(rs, gpu))["d"]
	})
	if _, err := b.h.Devices().Allocate(t.Context(), &devicesv1.AllocateRequest{ResourceName: gpu,
		Containers: []*devicesv1.ContainerAllocateRequest{{DeviceIds: []string{"b"}}}}); err != nil {
		t.Fatalf("Allocate: %v", err)
	}
	second.mu.Lock()
	defer second.mu.Unlock()
	if len(second.allocates) != 1 {
		t.Errorf("the second plugin got %d Allocate calls, want 1", len(second.allocates))
	}
	first.mu.Lock()
	defer first.mu.Unlock()
	if first.allocates != nil {
		t.Errorf("the replaced plugin got Allocate calls: %v", first.allocates)
	}
}

// A plugin whose socket vanishes, or whose stream ends, has its devices
// unhealthy and calls refused as retryable; after the grace period its
// resource is dropped. Registering again within the grace period brings it
// back.
func TestStoppedPlugin(t *testing.T) {
	for _, tc := range []struct {
		name string
		stop func(t *testing.T, f *fakePlugin)
	}{
		{name: "socket removed", stop: func(t *testing.T, f *fakePlugin) {
			if err := os.Remove(f.socket); err != nil {
				t.Fatal(err)
			}
		}},
		{name: "stream ended", stop: func(t *testing.T, f *fakePlugin) { f.server.Stop() }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := socketDir(t)
			b := startBridge(t, dir, time.Hour)
			f := startFake(t, dir, "gpu.sock", &pluginapi.DevicePluginOptions{}, healthy("a", "b"))
			if err := f.register(t, dir, gpu, pluginapi.Version); err != nil {
				t.Fatal(err)
			}
			b.waitFor(t, "the plugin's devices", func(rs []*devicesv1.Resource) bool { return len(find(rs, gpu).GetDevices()) == 2 })

			tc.stop(t, f)
			b.waitFor(t, "every device unhealthy", func(rs []*devicesv1.Resource) bool {
				return maps.Equal(healthOf(find(rs, gpu)), map[string]bool{"a": false, "b": false})
			})
			if _, err := b.h.Devices().Allocate(t.Context(), &devicesv1.AllocateRequest{ResourceName: gpu,
				Containers: []*devicesv1.ContainerAllocateRequest{{DeviceIds: []string{"a"}}}}); status.Code(err) != codes.Unavailable {
				t.Errorf("Allocate on a stopped plugin: %v, want UNAVAILABLE", err)
			}

			back := startFake(t, dir, "gpu-2.sock", &pluginapi.DevicePluginOptions{}, healthy("a", "b"))
			if err := back.register(t, dir, gpu, pluginapi.Version); err != nil {
				t.Fatal(err)
			}
			b.waitFor(t, "the devices healthy again", func(rs []*devicesv1.Resource) bool {
				return maps.Equal(healthOf(find(rs, gpu)), map[string]bool{"a": true, "b": true})
			})
		})
	}
}

func TestGracePeriodExpires(t *testing.T) {
	dir := socketDir(t)
	b := startBridge(t, dir, 50*time.Millisecond)
	f := startFake(t, dir, "gpu.sock", &pluginapi.DevicePluginOptions{}, healthy("a"))
	if err := f.register(t, dir, gpu, pluginapi.Version); err != nil {
		t.Fatal(err)
	}
	b.waitFor(t, "the plugin's device", func(rs []*devicesv1.Resource) bool { return find(rs, gpu) != nil })
	f.server.Stop()
	b.waitFor(t, "the resource dropped", func(rs []*devicesv1.Resource) bool { return find(rs, gpu) == nil })
	if _, err := b.h.Devices().Allocate(t.Context(), &devicesv1.AllocateRequest{ResourceName: gpu,
		Containers: []*devicesv1.ContainerAllocateRequest{{DeviceIds: []string{"a"}}}}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("Allocate on a dropped resource: %v, want INVALID_ARGUMENT", err)
	}
}

// A deleted kubelet.sock, or a deleted directory, is served again, and
// plugins can register on it.
func TestKubeletSocketRecreated(t *testing.T) {
	for _, tc := range []struct {
		name   string
		delete func(dir string) error
	}{
		{name: "socket", delete: func(dir string) error { return os.Remove(filepath.Join(dir, "kubelet.sock")) }},
		{name: "directory", delete: os.RemoveAll},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := socketDir(t)
			b := startBridge(t, dir, EndpointStopGracePeriod)
			if err := tc.delete(dir); err != nil {
				t.Fatal(err)
			}
			deadline := time.Now().Add(waitLimit)
			for {
				if _, err := os.Stat(filepath.Join(dir, "kubelet.sock")); err == nil {
					break
				}
				if time.Now().After(deadline) {
					t.Fatal("kubelet.sock was never served again")
				}
				time.Sleep(10 * time.Millisecond)
			}
			f := startFake(t, dir, "gpu.sock", &pluginapi.DevicePluginOptions{}, healthy("a"))
			if err := f.register(t, dir, gpu, pluginapi.Version); err != nil {
				t.Fatalf("Register after the deletion: %v", err)
			}
			b.waitFor(t, "the plugin's device", func(rs []*devicesv1.Resource) bool { return find(rs, gpu) != nil })
		})
	}
}

// A newer bridge process on the same directory (a hot swap) takes
// kubelet.sock over; the older one yields instead of replacing it back, and
// leaves it in place when it shuts down.
func TestTakeOver(t *testing.T) {
	dir := socketDir(t)
	old := startBridge(t, dir, EndpointStopGracePeriod)
	startBridge(t, dir, EndpointStopGracePeriod)
	deadline := time.Now().Add(waitLimit)
	for !old.plugin.socket.hasYielded() {
		if time.Now().After(deadline) {
			t.Fatal("the older bridge never yielded kubelet.sock")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := old.h.Shutdown(); err != nil {
		t.Fatal(err)
	}
	f := startFake(t, dir, "gpu.sock", &pluginapi.DevicePluginOptions{}, healthy("a"))
	if err := f.register(t, dir, gpu, pluginapi.Version); err != nil {
		t.Fatalf("Register with the newer bridge after the older one shut down: %v", err)
	}
}

func TestValidateConfig(t *testing.T) {
	b := startBridge(t, socketDir(t), EndpointStopGracePeriod)
	for _, tc := range []struct {
		dir  string
		want string
	}{
		{dir: "var/lib/kubelet/device-plugins", want: `expected an absolute path such as "/var/lib/kubelet/device-plugins/", got "var/lib/kubelet/device-plugins"`},
		{dir: "/" + strings.Repeat("d", 100), want: "is too long: a unix socket path has at most 107 bytes"},
	} {
		errs, err := b.h.ValidateConfig(map[string]any{"device_plugin_dir": tc.dir})
		if err != nil {
			t.Fatal(err)
		}
		if len(errs) != 1 || errs[0].Path != "device_plugin_dir" || !strings.Contains(errs[0].Message, tc.want) {
			t.Errorf("ValidateConfig(%q) = %v, want device_plugin_dir: %q", tc.dir, errs, tc.want)
		}
	}
	if errs, err := b.h.ValidateConfig(map[string]any{}); err != nil || len(errs) != 0 {
		t.Errorf("ValidateConfig of the defaults = %v, %v", errs, err)
	}
}

// A bridge process that starts removes the sockets of plugins registered
// with an earlier one, as the kubelet does at start, so that plugins that
// watch their own socket register again; whatever else is in the
// directory stays.
func TestStaleSocketsRemoved(t *testing.T) {
	dir := socketDir(t)
	f := startFake(t, dir, "gpu.sock", &pluginapi.DevicePluginOptions{}, healthy("a"))
	keep := []string{filepath.Join(dir, "notes.txt"), filepath.Join(dir, "sub")}
	if err := os.WriteFile(keep[0], []byte("an operator's file"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(keep[1], 0o755); err != nil {
		t.Fatal(err)
	}
	startBridge(t, dir, EndpointStopGracePeriod)
	if _, err := os.Lstat(f.socket); !os.IsNotExist(err) {
		t.Errorf("the earlier plugin's socket %s: %v, want it removed", f.socket, err)
	}
	for _, p := range append(keep, filepath.Join(dir, "kubelet.sock")) {
		if _, err := os.Lstat(p); err != nil {
			t.Errorf("%s: %v, want it kept", p, err)
		}
	}
}
