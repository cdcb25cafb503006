package devices

import (
	"slices"
	"testing"

	devicesv1 "github.com/microlet/microlet/proto/microlet/devices/v1"
)

// A host device node is found under every other resource that holds it
// allocated, whatever the pod and container.
func TestResourcesHolding(t *testing.T) {
	holding := func(paths ...string) *allocation {
		resp := &devicesv1.ContainerAllocateResponse{}
		for _, p := range paths {
			resp.Devices = append(resp.Devices, &devicesv1.DeviceSpec{ContainerPath: p, HostPath: p})
		}
		return &allocation{response: resp}
	}
	p := podAllocations{}
	p.set("pod-a", "app", "microlet.dev/tun", holding("/dev/net/tun"))
	p.set("pod-b", "app", "squat.ai/tun", holding("/dev/net/tun"))
	p.set("pod-b", "side", "squat.ai/tun", holding("/dev/net/tun"))
	p.set("pod-c", "app", "microlet.dev/fuse", holding("/dev/fuse"))
	for _, tc := range []struct {
		path, resource string
		want           []string
	}{
		{"/dev/net/tun", "microlet.dev/tun", []string{"squat.ai/tun"}},
		{"/dev/net/tun", "example.com/tun", []string{"microlet.dev/tun", "squat.ai/tun"}},
		{"/dev/fuse", "microlet.dev/fuse", nil},
		{"/dev/kvm", "microlet.dev/kvm", nil},
	} {
		if got := p.resourcesHolding(tc.path, tc.resource); !slices.Equal(got, tc.want) {
			t.Errorf("resourcesHolding(%s, %s) = %q, want %q", tc.path, tc.resource, got, tc.want)
		}
	}
}
