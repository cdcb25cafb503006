package hostdev

import (
	"io/fs"
	"maps"
	"slices"
	"testing"
	"testing/fstest"

	"google.golang.org/protobuf/proto"

	devicesv1 "github.com/microlet/microlet/proto/microlet/devices/v1"
)

// devFS is a fake host root with a few device nodes, a directory and a
// regular file.
func devFS() fstest.MapFS {
	char := &fstest.MapFile{Mode: fs.ModeDevice | fs.ModeCharDevice | 0o666}
	return fstest.MapFS{
		"dev/fuse":         char,
		"dev/net/tun":      char,
		"dev/dri/renderD1": char,
		"dev/dri/renderD2": char,
		"dev/dri/card0":    char,
		"dev/sda":          &fstest.MapFile{Mode: fs.ModeDevice | 0o660},
		"dev/shm":          &fstest.MapFile{Mode: fs.ModeDir | 0o777},
		"dev/notes":        &fstest.MapFile{Data: []byte("not a device")},
	}
}

func TestScan(t *testing.T) {
	for _, tc := range []struct {
		name          string
		resources     []ResourceConfig
		want          map[string][]string
		wantConflicts []string
	}{
		{
			name:      "one node",
			resources: []ResourceConfig{{Name: "microlet.dev/fuse", Paths: []string{"/dev/fuse"}}},
			want:      map[string][]string{"microlet.dev/fuse": {"/dev/fuse"}},
		},
		{
			name:      "a glob makes one device per node",
			resources: []ResourceConfig{{Name: "microlet.dev/render", Paths: []string{"/dev/dri/renderD*"}}},
			want:      map[string][]string{"microlet.dev/render": {"/dev/dri/renderD1", "/dev/dri/renderD2"}},
		},
		{
			name:      "block devices count, other files do not",
			resources: []ResourceConfig{{Name: "microlet.dev/any", Paths: []string{"/dev/s*", "/dev/notes"}}},
			want:      map[string][]string{"microlet.dev/any": {"/dev/sda"}},
		},
		{
			name:      "a missing node offers nothing",
			resources: []ResourceConfig{{Name: "microlet.dev/kvm", Paths: []string{"/dev/kvm"}}},
			want:      map[string][]string{},
		},
		{
			name: "a node matched twice goes to the first resource",
			resources: []ResourceConfig{
				{Name: "microlet.dev/render", Paths: []string{"/dev/dri/renderD1"}},
				{Name: "microlet.dev/dri", Paths: []string{"/dev/dri/*"}},
			},
			want: map[string][]string{
				"microlet.dev/render": {"/dev/dri/renderD1"},
				"microlet.dev/dri":    {"/dev/dri/card0", "/dev/dri/renderD2"},
			},
			wantConflicts: []string{"/dev/dri/renderD1 matches both microlet.dev/render and microlet.dev/dri; it is offered as microlet.dev/render only"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, conflicts, err := scan(devFS(), tc.resources)
			if err != nil {
				t.Fatalf("scan: %v", err)
			}
			if !maps.EqualFunc(got, tc.want, slices.Equal) {
				t.Errorf("scan found %v, want %v", got, tc.want)
			}
			if !slices.Equal(conflicts, tc.wantConflicts) {
				t.Errorf("conflicts %q, want %q", conflicts, tc.wantConflicts)
			}
		})
	}
}

// A node that disappears stays listed, unhealthy, and is healthy again
// when it comes back; a configured resource without nodes is listed empty.
func TestInventory(t *testing.T) {
	resources := []ResourceConfig{
		{Name: "microlet.dev/render", Paths: []string{"/dev/dri/renderD*"}},
		{Name: "microlet.dev/kvm", Paths: []string{"/dev/kvm"}},
	}
	dev := func(id string, healthy bool) *devicesv1.Device { return &devicesv1.Device{Id: id, Healthy: healthy} }
	steps := []struct {
		found map[string][]string
		want  []*devicesv1.Resource
	}{
		{
			found: map[string][]string{"microlet.dev/render": {"/dev/dri/renderD1", "/dev/dri/renderD2"}},
			want: []*devicesv1.Resource{
				{Name: "microlet.dev/kvm"},
				{Name: "microlet.dev/render", Devices: []*devicesv1.Device{dev("/dev/dri/renderD1", true), dev("/dev/dri/renderD2", true)}},
			},
		},
		{
			found: map[string][]string{"microlet.dev/render": {"/dev/dri/renderD2"}},
			want: []*devicesv1.Resource{
				{Name: "microlet.dev/kvm"},
				{Name: "microlet.dev/render", Devices: []*devicesv1.Device{dev("/dev/dri/renderD1", false), dev("/dev/dri/renderD2", true)}},
			},
		},
		{
			found: map[string][]string{"microlet.dev/render": {"/dev/dri/renderD1", "/dev/dri/renderD2"}, "microlet.dev/kvm": {"/dev/kvm"}},
			want: []*devicesv1.Resource{
				{Name: "microlet.dev/kvm", Devices: []*devicesv1.Device{dev("/dev/kvm", true)}},
				{Name: "microlet.dev/render", Devices: []*devicesv1.Device{dev("/dev/dri/renderD1", true), dev("/dev/dri/renderD2", true)}},
			},
		},
	}
	inv := inventory{}
	for i, step := range steps {
		inv = inv.update(step.found)
		got := inv.resources(resources)
		if !slices.EqualFunc(got, step.want, func(a, b *devicesv1.Resource) bool { return proto.Equal(a, b) }) {
			t.Errorf("step %d: resources\n got %v\nwant %v", i, got, step.want)
		}
	}
}
