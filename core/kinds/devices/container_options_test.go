package devices

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/core/pods/podruntime"
	devicesv1 "github.com/microlet/microlet/proto/microlet/devices/v1"
)

// Allocations of several resources merge as upstream merges them: the
// first setting of a key or path wins, conflicts are reported, CDI devices
// are listed once.
func TestContainerOptionsMerge(t *testing.T) {
	for _, tc := range []struct {
		name          string
		responses     []*devicesv1.ContainerAllocateResponse
		want          podruntime.ContainerOptions
		wantConflicts []string
	}{
		{
			name: "one resource",
			responses: []*devicesv1.ContainerAllocateResponse{{
				Envs:        map[string]string{"B": "2", "A": "1"},
				Mounts:      []*devicesv1.Mount{{ContainerPath: "/run/x", HostPath: "/var/x", ReadOnly: true}},
				Devices:     []*devicesv1.DeviceSpec{{ContainerPath: "/dev/x", HostPath: "/dev/x0", Permissions: "r"}},
				Annotations: map[string]string{"vendor/x": "0"},
				CdiDevices:  []string{"vendor.com/x=0"},
			}},
			want: podruntime.ContainerOptions{
				Envs:        map[string]string{"A": "1", "B": "2"},
				Mounts:      []*runtimeapi.Mount{{ContainerPath: "/run/x", HostPath: "/var/x", Readonly: true}},
				Devices:     []*runtimeapi.Device{{ContainerPath: "/dev/x", HostPath: "/dev/x0", Permissions: "r"}},
				Annotations: map[string]string{"vendor/x": "0"},
				CDIDevices:  []*runtimeapi.CDIDevice{{Name: "vendor.com/x=0"}},
			},
		},
		{
			name: "two resources, same settings",
			responses: []*devicesv1.ContainerAllocateResponse{
				{Envs: map[string]string{"A": "1"}, Devices: []*devicesv1.DeviceSpec{{ContainerPath: "/dev/ctl", HostPath: "/dev/ctl"}}, CdiDevices: []string{"v/x=all"}},
				{Envs: map[string]string{"A": "1"}, Devices: []*devicesv1.DeviceSpec{{ContainerPath: "/dev/ctl", HostPath: "/dev/ctl"}}, CdiDevices: []string{"v/x=all"}},
			},
			want: podruntime.ContainerOptions{
				Envs:       map[string]string{"A": "1"},
				Devices:    []*runtimeapi.Device{{ContainerPath: "/dev/ctl", HostPath: "/dev/ctl"}},
				CDIDevices: []*runtimeapi.CDIDevice{{Name: "v/x=all"}},
			},
		},
		{
			name: "two resources in conflict",
			responses: []*devicesv1.ContainerAllocateResponse{
				{Envs: map[string]string{"A": "1"}, Mounts: []*devicesv1.Mount{{ContainerPath: "/m", HostPath: "/one"}},
					Devices: []*devicesv1.DeviceSpec{{ContainerPath: "/dev/d", HostPath: "/dev/one"}}, Annotations: map[string]string{"k": "1"}},
				{Envs: map[string]string{"A": "2"}, Mounts: []*devicesv1.Mount{{ContainerPath: "/m", HostPath: "/two"}},
					Devices: []*devicesv1.DeviceSpec{{ContainerPath: "/dev/d", HostPath: "/dev/two"}}, Annotations: map[string]string{"k": "2"}},
			},
			want: podruntime.ContainerOptions{
				Envs:        map[string]string{"A": "1"},
				Mounts:      []*runtimeapi.Mount{{ContainerPath: "/m", HostPath: "/one"}},
				Devices:     []*runtimeapi.Device{{ContainerPath: "/dev/d", HostPath: "/dev/one"}},
				Annotations: map[string]string{"k": "1"},
			},
			wantConflicts: []string{"an environment variable A", "an annotation k", "a mount /m", "a device node /dev/d"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var conflicts []string
			merge := &containerOptionsMerge{log: func(what, key, kept, dropped string) { conflicts = append(conflicts, what+" "+key) }}
			for _, r := range tc.responses {
				merge.add(&allocation{response: r})
			}
			if !equalOptions(&merge.out, &tc.want) {
				t.Errorf("merged %+v, want %+v", merge.out, tc.want)
			}
			if len(conflicts) != len(tc.wantConflicts) {
				t.Fatalf("conflicts %q, want %q", conflicts, tc.wantConflicts)
			}
			for i := range conflicts {
				if conflicts[i] != tc.wantConflicts[i] {
					t.Errorf("conflict %d: %q, want %q", i, conflicts[i], tc.wantConflicts[i])
				}
			}
		})
	}
}

// A container without devices gets no options.
func TestContainerOptionsWithoutDevices(t *testing.T) {
	m := newManager(t, t.TempDir(), &slots{})
	pod := newPod("1", container("app"))
	if opts, err := m.ContainerOptions(t.Context(), pod, &pod.Spec.Containers[0]); opts != nil || err != nil {
		t.Errorf("ContainerOptions = %+v, %v; want nil, nil", opts, err)
	}
}
