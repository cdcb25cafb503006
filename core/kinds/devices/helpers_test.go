package devices

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/pluginhost"
	devicesv1 "github.com/microlet/microlet/proto/microlet/devices/v1"
	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/sdktest"
)

// waitLimit bounds every wait for the manager's background work, so that
// a broken manager fails a test instead of hanging it.
const waitLimit = 10 * time.Second

const gpu = "example.com/gpu"

// fakePlugin is a devices plugin served through the SDK: it offers what a
// test sets and records the core's calls. Its Allocate names the devices
// in an environment variable and gives each as /dev/<id>.
type fakePlugin struct {
	mu        sync.Mutex
	resources []*devicesv1.Resource
	changed   chan struct{}
	allocates []*devicesv1.AllocateRequest
	preferred []*devicesv1.GetPreferredAllocationRequest
	preStarts []*devicesv1.PreStartContainerRequest
	// allocateErr, if set, is Allocate's answer.
	allocateErr error
}

func newFakePlugin(resources ...*devicesv1.Resource) *fakePlugin {
	return &fakePlugin{resources: resources, changed: make(chan struct{})}
}

func (f *fakePlugin) Configure(context.Context, *struct{}, *sdk.Host) error { return nil }

func (f *fakePlugin) ListAndWatch(ctx context.Context, send func([]*devicesv1.Resource) error) error {
	for {
		f.mu.Lock()
		resources, changed := f.resources, f.changed
		f.mu.Unlock()
		if err := send(resources); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-changed:
		}
	}
}

// offer replaces what the plugin offers.
func (f *fakePlugin) offer(resources ...*devicesv1.Resource) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.resources = resources
	close(f.changed)
	f.changed = make(chan struct{})
}

func (f *fakePlugin) Allocate(_ context.Context, req *devicesv1.AllocateRequest) (*devicesv1.AllocateResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.allocates = append(f.allocates, req)
	if f.allocateErr != nil {
		return nil, f.allocateErr
	}
	resp := &devicesv1.AllocateResponse{}
	for _, c := range req.GetContainers() {
		r := &devicesv1.ContainerAllocateResponse{Envs: map[string]string{envName(req.GetResourceName()): strings.Join(c.GetDeviceIds(), ",")}}
		for _, id := range c.GetDeviceIds() {
			r.Devices = append(r.Devices, &devicesv1.DeviceSpec{ContainerPath: "/dev/" + id, HostPath: "/dev/" + id, Permissions: "rw"})
		}
		resp.Containers = append(resp.Containers, r)
	}
	return resp, nil
}

// envName is the variable the fake names a resource's devices in.
func envName(resource string) string {
	return strings.ToUpper(strings.NewReplacer(".", "_", "/", "_").Replace(resource))
}

// GetPreferredAllocation prefers the last available devices.
func (f *fakePlugin) GetPreferredAllocation(_ context.Context, req *devicesv1.GetPreferredAllocationRequest) (*devicesv1.GetPreferredAllocationResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.preferred = append(f.preferred, req)
	c := req.GetContainers()[0]
	ids := c.GetAvailableDeviceIds()
	return &devicesv1.GetPreferredAllocationResponse{Containers: []*devicesv1.ContainerPreferredAllocationResponse{
		{DeviceIds: ids[len(ids)-int(c.GetAllocationSize()):]},
	}}, nil
}

func (f *fakePlugin) PreStartContainer(_ context.Context, req *devicesv1.PreStartContainerRequest) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.preStarts = append(f.preStarts, req)
	return nil
}

// calls are the Allocate calls so far.
func (f *fakePlugin) calls() []*devicesv1.AllocateRequest {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.allocates)
}

// devices is a resource with healthy devices of these IDs.
func devices(name string, ids ...string) *devicesv1.Resource {
	r := &devicesv1.Resource{Name: name}
	for _, id := range ids {
		r.Devices = append(r.Devices, &devicesv1.Device{Id: id, Healthy: true})
	}
	return r
}

// testSlot is a devices slot whose plugin a test takes down and brings
// back, as the plugin host does on a crash and a restart.
type testSlot struct {
	name string
	h    *sdktest.Harness

	mu   sync.Mutex
	down bool
	// done is the serving process's Lease.Done.
	done chan struct{}
}

// serve runs p in-process as the slot's plugin.
func serve(t *testing.T, name string, p *fakePlugin) *testSlot {
	t.Helper()
	h := sdktest.InProcess(t, sdk.Info{Kind: sdk.KindDevices, Name: name, Version: "0.1.0"}, p)
	if err := h.Configure(nil); err != nil {
		t.Fatal(err)
	}
	return &testSlot{name: name, h: h, done: make(chan struct{})}
}

func (s *testSlot) Name() string { return s.name }

func (s *testSlot) Acquire(context.Context) (*pluginhost.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.down {
		return nil, fmt.Errorf("%w: plugin devices/%s is Restarting", pluginhost.ErrUnavailable, s.name)
	}
	return &pluginhost.Lease{Conn: s.h.Conn(), Done: s.done, Release: func() {}}, nil
}

// crash makes the plugin unavailable: its lease ends, Acquire fails.
func (s *testSlot) crash() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = true
	close(s.done)
}

// restart makes it serve again.
func (s *testSlot) restart() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.down = false
	s.done = make(chan struct{})
}

// slots is a mutable list of configured slots.
type slots struct {
	mu   sync.Mutex
	list []Slot
}

func (s *slots) get() []Slot {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.list)
}

func (s *slots) set(list ...Slot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.list = list
}

// newManager makes a manager on rootDir for the slots.
func newManager(t *testing.T, rootDir string, configured *slots) *Manager {
	t.Helper()
	m, err := New(Options{Plugins: configured.get, RootDir: rootDir, Logger: hclog.New(&hclog.LoggerOptions{Output: testWriter{t}, Level: hclog.Debug})})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return m
}

// run runs m until the test ends.
func run(t *testing.T, m *Manager) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

// eventually waits until cond holds.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("never: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// offers waits until the manager reports resource with this capacity and
// allocatable.
func offers(t *testing.T, m *Manager, resource string, capacity, allocatable int64) {
	t.Helper()
	eventually(t, fmt.Sprintf("%s capacity %d allocatable %d", resource, capacity, allocatable), func() bool {
		c, known := m.Capacity()[v1.ResourceName(resource)]
		a := m.Allocatable()[v1.ResourceName(resource)]
		return known && c.Value() == capacity && a.Value() == allocatable
	})
}

// container asks for devices: resource name, count, ...
func container(name string, asks ...any) v1.Container {
	c := v1.Container{Name: name, Resources: v1.ResourceRequirements{Limits: v1.ResourceList{}}}
	for i := 0; i < len(asks); i += 2 {
		c.Resources.Limits[v1.ResourceName(asks[i].(string))] = *resource.NewQuantity(int64(asks[i+1].(int)), resource.DecimalSI)
	}
	return c
}

func newPod(uid string, containers ...v1.Container) *v1.Pod {
	return &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pod-" + uid, Namespace: "default", UID: types.UID(uid)}, Spec: v1.PodSpec{Containers: containers}}
}
