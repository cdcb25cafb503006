package bridge

import (
	"context"
	"net"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	devicesv1 "github.com/microlet/microlet/proto/microlet/devices/v1"
	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/sdktest"
)

// waitLimit bounds every wait for something the bridge does in the
// background, so that a broken bridge fails the test instead of hanging it.
const waitLimit = 10 * time.Second

var info = sdk.Info{Kind: sdk.KindDevices, Name: "kubernetes", Version: "0.1.0"}

// fakePlugin is an upstream device plugin, as a vendor DaemonSet runs it,
// served on a unix socket in the test's device plugin directory.
type fakePlugin struct {
	pluginapi.UnimplementedDevicePluginServer
	options *pluginapi.DevicePluginOptions
	socket  string
	server  *grpc.Server
	updates chan []*pluginapi.Device

	mu        sync.Mutex
	devices   []*pluginapi.Device
	allocates []*pluginapi.AllocateRequest
	preStarts []*pluginapi.PreStartContainerRequest
}

func healthy(ids ...string) []*pluginapi.Device {
	var out []*pluginapi.Device
	for _, id := range ids {
		out = append(out, &pluginapi.Device{ID: id, Health: pluginapi.Healthy})
	}
	return out
}

// startFake serves a fake plugin with devices on dir/name until the test
// ends.
func startFake(t *testing.T, dir, name string, options *pluginapi.DevicePluginOptions, devices []*pluginapi.Device) *fakePlugin {
	t.Helper()
	f := &fakePlugin{options: options, socket: filepath.Join(dir, name), devices: devices, updates: make(chan []*pluginapi.Device)}
	ln, err := net.Listen("unix", f.socket)
	if err != nil {
		t.Fatal(err)
	}
	f.server = grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(f.server, f)
	go f.server.Serve(ln)
	t.Cleanup(f.server.Stop)
	return f
}

// register registers the fake on the bridge's kubelet.sock.
func (f *fakePlugin) register(t *testing.T, dir, resource, version string) error {
	t.Helper()
	return registerRequest(t, dir, &pluginapi.RegisterRequest{Version: version, Endpoint: filepath.Base(f.socket), ResourceName: resource, Options: f.options})
}

// registerRequest sends req to the bridge's kubelet.sock in dir, waiting
// for the socket to serve.
func registerRequest(t *testing.T, dir string, req *pluginapi.RegisterRequest) error {
	t.Helper()
	conn, err := grpc.NewClient("unix:"+filepath.Join(dir, "kubelet.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(t.Context(), waitLimit)
	defer cancel()
	_, err = pluginapi.NewRegistrationClient(conn).Register(ctx, req, grpc.WaitForReady(true))
	return err
}

// update makes the fake's ListAndWatch send devices.
func (f *fakePlugin) update(devices []*pluginapi.Device) {
	f.mu.Lock()
	f.devices = devices
	f.mu.Unlock()
	f.updates <- devices
}

func (f *fakePlugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return f.options, nil
}

func (f *fakePlugin) ListAndWatch(_ *pluginapi.Empty, stream pluginapi.DevicePlugin_ListAndWatchServer) error {
	f.mu.Lock()
	devices := f.devices
	f.mu.Unlock()
	if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: devices}); err != nil {
		return err
	}
	for {
		select {
		case <-stream.Context().Done():
			return nil
		case devices := <-f.updates:
			if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: devices}); err != nil {
				return err
			}
		}
	}
}

// GetPreferredAllocation prefers the last available devices.
func (f *fakePlugin) GetPreferredAllocation(_ context.Context, req *pluginapi.PreferredAllocationRequest) (*pluginapi.PreferredAllocationResponse, error) {
	resp := &pluginapi.PreferredAllocationResponse{}
	for _, c := range req.GetContainerRequests() {
		ids := c.GetAvailableDeviceIDs()
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerPreferredAllocationResponse{DeviceIDs: ids[len(ids)-int(c.GetAllocationSize()):]})
	}
	return resp, nil
}

// Allocate answers with every kind of setting, naming the devices.
func (f *fakePlugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	f.mu.Lock()
	f.allocates = append(f.allocates, req)
	f.mu.Unlock()
	resp := &pluginapi.AllocateResponse{}
	for _, c := range req.GetContainerRequests() {
		r := &pluginapi.ContainerAllocateResponse{Envs: map[string]string{"FAKE_DEVICES": c.GetDevicesIds()[0]}, Annotations: map[string]string{"fake": "yes"}}
		for _, id := range c.GetDevicesIds() {
			r.Devices = append(r.Devices, &pluginapi.DeviceSpec{ContainerPath: "/dev/" + id, HostPath: "/dev/" + id, Permissions: "rw"})
			r.Mounts = append(r.Mounts, &pluginapi.Mount{ContainerPath: "/run/" + id, HostPath: "/tmp/" + id, ReadOnly: true})
			r.CdiDevices = append(r.CdiDevices, &pluginapi.CDIDevice{Name: "example.com/fake=" + id})
		}
		resp.ContainerResponses = append(resp.ContainerResponses, r)
	}
	return resp, nil
}

func (f *fakePlugin) PreStartContainer(_ context.Context, req *pluginapi.PreStartContainerRequest) (*pluginapi.PreStartContainerResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.preStarts = append(f.preStarts, req)
	return &pluginapi.PreStartContainerResponse{}, nil
}

// bridgeUnderTest is the bridge served as the core serves it, with a
// directory of its own.
type bridgeUnderTest struct {
	plugin *Plugin
	h      *sdktest.Harness
	dir    string
	// resources are the ListAndWatch messages the core side receives.
	resources chan []*devicesv1.Resource
}

// socketDir is a new short directory (socket paths are limited to 107
// bytes; t.TempDir's carry the test's name), removed after the test.
func socketDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "mldp-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// startBridge configures a bridge on dir and opens the core's ListAndWatch.
func startBridge(t *testing.T, dir string, grace time.Duration) *bridgeUnderTest {
	t.Helper()
	p := New()
	p.gracePeriod = grace
	b := &bridgeUnderTest{plugin: p, h: sdktest.InProcess(t, info, p), dir: dir, resources: make(chan []*devicesv1.Resource, 64)}
	if err := b.h.Configure(map[string]any{"device_plugin_dir": dir}); err != nil {
		t.Fatalf("Configure: %v", err)
	}
	// Shut down before the harness closes, as the core does.
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	stream, err := b.h.Devices().ListAndWatch(ctx, &devicesv1.ListAndWatchRequest{})
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		for {
			resp, err := stream.Recv()
			if err != nil {
				return
			}
			b.resources <- resp.GetResources()
		}
	}()
	return b
}

// waitFor returns the first set of resources the core receives for which
// ok holds.
func (b *bridgeUnderTest) waitFor(t *testing.T, what string, ok func([]*devicesv1.Resource) bool) []*devicesv1.Resource {
	t.Helper()
	deadline := time.After(waitLimit)
	var last []*devicesv1.Resource
	for {
		select {
		case rs := <-b.resources:
			if ok(rs) {
				return rs
			}
			last = rs
		case <-deadline:
			t.Fatalf("the core never saw %s; last resources: %v", what, last)
		}
	}
}

// find returns the named resource of rs, or nil.
func find(rs []*devicesv1.Resource, name string) *devicesv1.Resource {
	for _, r := range rs {
		if r.GetName() == name {
			return r
		}
	}
	return nil
}

// healthOf is the health of r's devices by ID.
func healthOf(r *devicesv1.Resource) map[string]bool {
	out := map[string]bool{}
	for _, d := range r.GetDevices() {
		out[d.GetId()] = d.GetHealthy()
	}
	return out
}

// hasYielded says whether another process took the socket over.
func (k *kubeletSocket) hasYielded() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.yielded
}
