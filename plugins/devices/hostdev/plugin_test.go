package hostdev

import (
	"context"
	"io/fs"
	"sync"
	"testing"
	"testing/fstest"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	devicesv1 "github.com/microlet/microlet/proto/microlet/devices/v1"
	"github.com/microlet/microlet/sdk/sdktest"
)

// mutableFS is a fake host root whose nodes a test removes while the
// plugin reads it.
type mutableFS struct {
	mu    sync.Mutex
	files fstest.MapFS
}

func (m *mutableFS) Open(name string) (fs.File, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.files.Open(name)
}

func (m *mutableFS) remove(name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.files, name)
}

// The plugin as the core sees it: the configured nodes listed, Allocate
// giving device specs at the same path, and a node that disappears
// reported unhealthy and refused.
func TestPlugin(t *testing.T) {
	root := &mutableFS{files: devFS()}
	p := newPlugin(root)
	h := sdktest.InProcess(t, info, p)
	// The scans stop even if the test fails before its Shutdown.
	t.Cleanup(func() { _ = p.Shutdown(context.Background()) })
	if err := h.Configure(map[string]any{"resources": []any{
		fuse(),
		map[string]any{"name": "microlet.dev/render", "paths": []string{"/dev/dri/renderD*"}, "permissions": "rw"},
	}}); err != nil {
		t.Fatalf("Configure: %v", err)
	}
	stream, err := h.Devices().ListAndWatch(t.Context(), &devicesv1.ListAndWatchRequest{})
	if err != nil {
		t.Fatal(err)
	}
	first, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	want := []*devicesv1.Resource{
		{Name: "microlet.dev/fuse", Devices: []*devicesv1.Device{{Id: "/dev/fuse", Healthy: true}}},
		{Name: "microlet.dev/render", Devices: []*devicesv1.Device{{Id: "/dev/dri/renderD1", Healthy: true}, {Id: "/dev/dri/renderD2", Healthy: true}}},
	}
	if !proto.Equal(first, &devicesv1.ListAndWatchResponse{Resources: want}) {
		t.Fatalf("ListAndWatch first message %v, want %v", first, want)
	}

	alloc, err := h.Devices().Allocate(t.Context(), &devicesv1.AllocateRequest{ResourceName: "microlet.dev/render", PodUid: "pod-1",
		Containers: []*devicesv1.ContainerAllocateRequest{{DeviceIds: []string{"/dev/dri/renderD1"}}, {DeviceIds: []string{"/dev/dri/renderD2"}}}})
	if err != nil {
		t.Fatalf("Allocate: %v", err)
	}
	wantAlloc := &devicesv1.AllocateResponse{Containers: []*devicesv1.ContainerAllocateResponse{
		{Devices: []*devicesv1.DeviceSpec{{ContainerPath: "/dev/dri/renderD1", HostPath: "/dev/dri/renderD1", Permissions: "rw"}}},
		{Devices: []*devicesv1.DeviceSpec{{ContainerPath: "/dev/dri/renderD2", HostPath: "/dev/dri/renderD2", Permissions: "rw"}}},
	}}
	if !proto.Equal(alloc, wantAlloc) {
		t.Errorf("Allocate = %v, want %v", alloc, wantAlloc)
	}

	root.remove("dev/dri/renderD2")
	if err := p.rescan(); err != nil {
		t.Fatal(err)
	}
	next, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if d := next.GetResources()[1].GetDevices()[1]; d.GetId() != "/dev/dri/renderD2" || d.GetHealthy() {
		t.Errorf("after its node went away, device %v; want /dev/dri/renderD2 unhealthy", d)
	}

	for _, tc := range []struct {
		name string
		req  *devicesv1.AllocateRequest
	}{
		{"unhealthy device", &devicesv1.AllocateRequest{ResourceName: "microlet.dev/render", Containers: []*devicesv1.ContainerAllocateRequest{{DeviceIds: []string{"/dev/dri/renderD2"}}}}},
		{"unknown device", &devicesv1.AllocateRequest{ResourceName: "microlet.dev/render", Containers: []*devicesv1.ContainerAllocateRequest{{DeviceIds: []string{"/dev/dri/renderD9"}}}}},
		{"unknown resource", &devicesv1.AllocateRequest{ResourceName: "microlet.dev/kvm", Containers: []*devicesv1.ContainerAllocateRequest{{DeviceIds: []string{"/dev/kvm"}}}}},
	} {
		if _, err := h.Devices().Allocate(t.Context(), tc.req); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: Allocate error %v, want INVALID_ARGUMENT", tc.name, err)
		}
	}
	if err := h.Shutdown(); err != nil {
		t.Errorf("Shutdown: %v", err)
	}
}
