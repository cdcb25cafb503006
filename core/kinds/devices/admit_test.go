package devices

import (
	"maps"
	"slices"
	"strings"
	"testing"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/core/pods/podruntime"
	"github.com/microlet/microlet/core/pods/syncloop"
	"github.com/microlet/microlet/sdk"
)

// A pod gets the plugin's preferred devices, Allocate's answer goes into
// its container's config after PreStartContainer, and a pod asking for
// more than is free is refused in upstream's words.
func TestAdmitAllocatesPreferredDevices(t *testing.T) {
	r := devices(gpu, "a", "b", "c")
	r.PreferredAllocationAvailable, r.PreStartRequired = true, true
	plugin := newFakePlugin(r)
	m := newManager(t, t.TempDir(), &slots{list: []Slot{serve(t, "gpu", plugin)}})
	run(t, m)
	offers(t, m, gpu, 3, 3)

	pod := newPod("1", container("app", gpu, 2))
	if got := m.Admit(t.Context(), pod, nil); !got.Admit {
		t.Fatalf("Admit = %+v, want admitted", got)
	}
	calls := plugin.calls()
	if len(calls) != 1 || !slices.Equal(calls[0].GetContainers()[0].GetDeviceIds(), []string{"b", "c"}) || calls[0].GetPodUid() != "1" {
		t.Fatalf("Allocate calls %v, want one for pod 1 with the preferred b, c", calls)
	}
	plugin.mu.Lock()
	pref := plugin.preferred
	plugin.mu.Unlock()
	if len(pref) != 1 || !slices.Equal(pref[0].GetContainers()[0].GetAvailableDeviceIds(), []string{"a", "b", "c"}) || pref[0].GetContainers()[0].GetAllocationSize() != 2 {
		t.Errorf("GetPreferredAllocation calls %v, want one offering a, b, c for 2", pref)
	}

	opts, err := m.ContainerOptions(t.Context(), pod, &pod.Spec.Containers[0])
	if err != nil {
		t.Fatalf("ContainerOptions: %v", err)
	}
	want := &podruntime.ContainerOptions{
		Envs: map[string]string{"EXAMPLE_COM_GPU": "b,c"},
		Devices: []*runtimeapi.Device{
			{ContainerPath: "/dev/b", HostPath: "/dev/b", Permissions: "rw"},
			{ContainerPath: "/dev/c", HostPath: "/dev/c", Permissions: "rw"},
		},
	}
	if !equalOptions(opts, want) {
		t.Errorf("ContainerOptions = %+v, want %+v", opts, want)
	}
	plugin.mu.Lock()
	if len(plugin.preStarts) != 1 || !slices.Equal(plugin.preStarts[0].GetDeviceIds(), []string{"b", "c"}) {
		t.Errorf("PreStartContainer calls %v, want one for b, c", plugin.preStarts)
	}
	plugin.mu.Unlock()
	if a := m.Allocatable()[gpu]; a.Value() != 3 {
		t.Errorf("allocatable %v, want 3: allocated devices are still allocatable, as upstream reports them", a.String())
	}

	refused := m.Admit(t.Context(), newPod("2", container("app", gpu, 2)), nil)
	want2 := syncloop.Admission{Reason: "UnexpectedAdmissionError",
		Message: "Allocate failed due to requested number of devices unavailable for example.com/gpu. Requested: 2, Available: 1, which is unexpected"}
	if refused != want2 {
		t.Errorf("Admit beyond capacity = %+v, want %+v", refused, want2)
	}
	if got := m.Admit(t.Context(), newPod("3", container("app", gpu, 1)), nil); !got.Admit {
		t.Errorf("Admit of the last device = %+v, want admitted", got)
	}
}

func TestAdmitRefusals(t *testing.T) {
	flaky := devices("example.com/flaky", "x")
	flaky.Devices[0].Healthy = false
	plugin := newFakePlugin(devices(gpu, "a"), flaky)
	m := newManager(t, t.TempDir(), &slots{list: []Slot{serve(t, "gpu", plugin)}})
	run(t, m)
	offers(t, m, gpu, 1, 1)
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		want syncloop.Admission
	}{
		{name: "no extended resources", pod: newPod("1", container("app", "cpu", 1)), want: syncloop.Admission{Admit: true}},
		{name: "unregistered resource", pod: newPod("2", container("app", "example.com/none", 1)),
			want: syncloop.Admission{Reason: "UnexpectedAdmissionError", Message: "Allocate failed due to cannot allocate unregistered device example.com/none, which is unexpected"}},
		{name: "no healthy device", pod: newPod("3", container("app", "example.com/flaky", 1)),
			want: syncloop.Admission{Reason: "UnexpectedAdmissionError", Message: "Allocate failed due to no healthy devices present; cannot allocate unhealthy devices example.com/flaky, which is unexpected"}},
		{name: "two containers, one device", pod: newPod("4", container("a", gpu, 1), container("b", gpu, 1)),
			want: syncloop.Admission{Reason: "UnexpectedAdmissionError", Message: "Allocate failed due to requested number of devices unavailable for example.com/gpu. Requested: 1, Available: 0, which is unexpected"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := m.Admit(t.Context(), tc.pod, nil); got != tc.want {
				t.Errorf("Admit = %+v, want %+v", got, tc.want)
			}
		})
	}
	// The refused pod 4's first container gave its device back.
	if got := m.Admit(t.Context(), newPod("5", container("app", gpu, 1)), nil); !got.Admit {
		t.Errorf("Admit after a refusal = %+v, want admitted: a refused pod keeps no device", got)
	}
	plugin.mu.Lock()
	plugin.allocateErr = sdk.Invalid("the device is on fire")
	plugin.mu.Unlock()
	if err := m.Release(t.Context(), newPod("5")); err != nil {
		t.Fatal(err)
	}
	got := m.Admit(t.Context(), newPod("6", container("app", gpu, 1)), nil)
	if got.Admit || got.Reason != "UnexpectedAdmissionError" || !strings.Contains(got.Message, "the device is on fire") {
		t.Errorf("Admit when Allocate fails = %+v, want UnexpectedAdmissionError with the plugin's error", got)
	}
}

// As upstream, an init container's devices are free for the containers
// after it; a sidecar's are not.
func TestInitContainersReuseDevices(t *testing.T) {
	plugin := newFakePlugin(devices(gpu, "a", "b"))
	m := newManager(t, t.TempDir(), &slots{list: []Slot{serve(t, "gpu", plugin)}})
	run(t, m)
	offers(t, m, gpu, 2, 2)

	pod := newPod("1", container("app", gpu, 2))
	pod.Spec.InitContainers = []v1.Container{container("init", gpu, 2)}
	if got := m.Admit(t.Context(), pod, nil); !got.Admit {
		t.Fatalf("Admit of a pod whose init and app containers take both devices = %+v", got)
	}
	if err := m.Release(t.Context(), pod); err != nil {
		t.Fatal(err)
	}

	always := v1.ContainerRestartPolicyAlways
	sidecar := container("sidecar", gpu, 1)
	sidecar.RestartPolicy = &always
	withSidecar := newPod("2", container("app", gpu, 2))
	withSidecar.Spec.InitContainers = []v1.Container{sidecar}
	want := syncloop.Admission{Reason: "UnexpectedAdmissionError",
		Message: "Allocate failed due to requested number of devices unavailable for example.com/gpu. Requested: 2, Available: 1, which is unexpected"}
	if got := m.Admit(t.Context(), withSidecar, nil); got != want {
		t.Errorf("Admit with a sidecar holding a device = %+v, want %+v", got, want)
	}
}

// While a plugin is down its pods keep their devices, new pods asking for
// its resources wait, naming it, and are admitted once it serves again.
func TestPluginDownPodsWait(t *testing.T) {
	plugin := newFakePlugin(devices(gpu, "a", "b"))
	slot := serve(t, "gpu", plugin)
	m := newManager(t, t.TempDir(), &slots{list: []Slot{slot}})

	early := m.Admit(t.Context(), newPod("0", container("app", gpu, 1)), nil)
	if !early.Retry || !strings.Contains(early.Message, "waiting for devices/gpu to report their resources") {
		t.Errorf("Admit before the plugin reported = %+v, want a retry waiting for devices/gpu", early)
	}

	run(t, m)
	offers(t, m, gpu, 2, 2)
	running := newPod("1", container("app", gpu, 1))
	if got := m.Admit(t.Context(), running, nil); !got.Admit {
		t.Fatalf("Admit = %+v", got)
	}

	slot.crash()
	eventually(t, "the manager sees the plugin down", func() bool {
		got := m.Admit(t.Context(), newPod("2", container("app", gpu, 1)), nil)
		return got.Retry
	})
	got := m.Admit(t.Context(), newPod("2", container("app", gpu, 1)), nil)
	if !strings.Contains(got.Message, "device plugin devices/gpu, which serves example.com/gpu, is unavailable") {
		t.Errorf("Admit while the plugin is down = %+v, want a retry naming devices/gpu", got)
	}
	if c := m.Capacity()[gpu]; c.Value() != 2 {
		t.Errorf("capacity while the plugin is down = %v, want the last state, 2", c.String())
	}
	if opts, err := m.ContainerOptions(t.Context(), running, &running.Spec.Containers[0]); err != nil || opts.Envs["EXAMPLE_COM_GPU"] != "a" {
		t.Errorf("ContainerOptions of the running pod while the plugin is down = %+v, %v; want its allocation kept", opts, err)
	}

	slot.restart()
	eventually(t, "the pod admitted once the plugin serves again", func() bool {
		return m.Admit(t.Context(), newPod("2", container("app", gpu, 1)), nil).Admit
	})
}

// A device that turns unhealthy is not handed out; allocatable drops.
func TestUnhealthyDevices(t *testing.T) {
	plugin := newFakePlugin(devices(gpu, "a", "b"))
	m := newManager(t, t.TempDir(), &slots{list: []Slot{serve(t, "gpu", plugin)}})
	run(t, m)
	offers(t, m, gpu, 2, 2)
	r := devices(gpu, "a", "b")
	r.Devices[0].Healthy = false
	plugin.offer(r)
	offers(t, m, gpu, 2, 1)
	if got := m.Admit(t.Context(), newPod("1", container("app", gpu, 1)), nil); !got.Admit {
		t.Fatalf("Admit = %+v", got)
	}
	if calls := plugin.calls(); len(calls) != 1 || calls[0].GetContainers()[0].GetDeviceIds()[0] != "b" {
		t.Errorf("Allocate calls %v, want the healthy b", calls)
	}
}

// Two plugins offering the same resource: it stays with the first.
func TestResourceConflict(t *testing.T) {
	first, second := newFakePlugin(devices(gpu, "a")), newFakePlugin(devices(gpu, "x", "y"))
	configured := &slots{list: []Slot{serve(t, "first", first)}}
	m := newManager(t, t.TempDir(), configured)
	run(t, m)
	offers(t, m, gpu, 1, 1)
	configured.set(serve(t, "first", first), serve(t, "second", second))
	eventually(t, "the second plugin reported", func() bool {
		m.mu.Lock()
		defer m.mu.Unlock()
		st := m.plugins["second"]
		return st != nil && st.reported
	})
	if c := m.Capacity()[gpu]; c.Value() != 1 {
		t.Errorf("capacity %v, want the first plugin's 1 device", c.String())
	}
}

func TestRequestChangedAfterAdmission(t *testing.T) {
	plugin := newFakePlugin(devices(gpu, "a", "b"))
	m := newManager(t, t.TempDir(), &slots{list: []Slot{serve(t, "gpu", plugin)}})
	run(t, m)
	offers(t, m, gpu, 2, 2)
	if got := m.Admit(t.Context(), newPod("1", container("app", gpu, 1)), nil); !got.Admit {
		t.Fatal(got)
	}
	got := m.Admit(t.Context(), newPod("1", container("app", gpu, 2)), nil)
	if !strings.Contains(got.Message, `pod "1" container "app" changed request for resource "example.com/gpu" from 1 to 2`) {
		t.Errorf("Admit with a changed request = %+v", got)
	}
}

func equalOptions(a, b *podruntime.ContainerOptions) bool {
	eq := func(x, y proto.Message) bool { return proto.Equal(x, y) }
	return maps.Equal(a.Envs, b.Envs) && maps.Equal(a.Annotations, b.Annotations) &&
		slices.EqualFunc(a.Devices, b.Devices, func(x, y *runtimeapi.Device) bool { return eq(x, y) }) &&
		slices.EqualFunc(a.Mounts, b.Mounts, func(x, y *runtimeapi.Mount) bool { return eq(x, y) }) &&
		slices.EqualFunc(a.CDIDevices, b.CDIDevices, func(x, y *runtimeapi.CDIDevice) bool { return eq(x, y) })
}
