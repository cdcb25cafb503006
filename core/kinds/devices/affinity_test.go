package devices

import (
	"fmt"
	"slices"
	"testing"

	"github.com/hashicorp/go-hclog"
	"k8s.io/apimachinery/pkg/types"

	devicesv1 "github.com/microlet/microlet/proto/microlet/devices/v1"
)

// numaDevices is a resource on two NUMA nodes: a reports none, b and c
// sit on node 0, d and e on node 1.
func numaDevices(name string) *devicesv1.Resource {
	r := devices(name, "a", "b", "c", "d", "e")
	for _, d := range r.Devices[1:3] {
		d.NumaNodes = []int64{0}
	}
	for _, d := range r.Devices[3:] {
		d.NumaNodes = []int64{1}
	}
	return r
}

// Devices are picked as upstream's devicesToAllocate picks them with the
// topology manager's affinity: on its nodes first, the plugin choosing
// among those when they are more than enough; otherwise all of them, then
// the plugin's choice among every free device, then other nodes' devices,
// then those without a node. Without an affinity, or for a resource whose
// devices report no node, the order is as before: the plugin's, then IDs.
func TestDevicesFollowTheTopologyAffinity(t *testing.T) {
	const (
		numa = "example.com/numa" // no GetPreferredAllocation
		pref = "example.com/pref" // GetPreferredAllocation: the last offered
		flat = "example.com/flat" // no topology
	)
	withPref := numaDevices(pref)
	withPref.PreferredAllocationAvailable = true
	plugin := newFakePlugin(numaDevices(numa), withPref, devices(flat, "a", "b", "c", "d", "e"))
	affinity := map[types.UID][]int64{}
	m, err := New(Options{Plugins: (&slots{list: []Slot{serve(t, "dev", plugin)}}).get, RootDir: t.TempDir(),
		Logger:   hclog.New(&hclog.LoggerOptions{Output: testWriter{t}, Level: hclog.Debug}),
		Affinity: func(uid types.UID, container string) []int64 { return affinity[uid] }})
	if err != nil {
		t.Fatal(err)
	}
	run(t, m)
	for _, r := range []string{numa, pref, flat} {
		offers(t, m, r, 5, 5)
	}
	for i, tc := range []struct {
		resource string
		count    int
		affinity []int64
		want     []string
		// offered is what GetPreferredAllocation was offered, if called.
		offered []string
	}{
		{resource: numa, count: 1, affinity: []int64{1}, want: []string{"d"}},
		{resource: numa, count: 2, affinity: []int64{0}, want: []string{"b", "c"}},
		{resource: numa, count: 3, affinity: []int64{1}, want: []string{"b", "d", "e"}},
		{resource: numa, count: 5, affinity: []int64{1}, want: []string{"a", "b", "c", "d", "e"}},
		{resource: numa, count: 4, affinity: []int64{1}, want: []string{"b", "c", "d", "e"}},
		{resource: numa, count: 2, affinity: []int64{0, 1}, want: []string{"b", "c"}},
		{resource: numa, count: 1, want: []string{"a"}},
		{resource: pref, count: 1, affinity: []int64{1}, want: []string{"e"}, offered: []string{"d", "e"}},
		{resource: pref, count: 3, affinity: []int64{1}, want: []string{"c", "d", "e"}, offered: []string{"a", "b", "c", "d", "e"}},
		{resource: pref, count: 1, want: []string{"e"}, offered: []string{"a", "b", "c", "d", "e"}},
		{resource: flat, count: 1, affinity: []int64{1}, want: []string{"a"}},
	} {
		t.Run(fmt.Sprintf("%s %d on %v", tc.resource, tc.count, tc.affinity), func(t *testing.T) {
			uid := types.UID(fmt.Sprint("pod-", i))
			affinity[uid] = tc.affinity
			plugin.mu.Lock()
			plugin.allocates, plugin.preferred = nil, nil
			plugin.mu.Unlock()
			pod := newPod(string(uid), container("app", tc.resource, tc.count))
			if got := m.Admit(t.Context(), pod, nil); !got.Admit {
				t.Fatalf("Admit = %+v", got)
			}
			t.Cleanup(func() {
				if err := m.Release(t.Context(), pod); err != nil {
					t.Error(err)
				}
			})
			calls := plugin.calls()
			if len(calls) != 1 {
				t.Fatalf("Allocate calls %v, want one", calls)
			}
			got := slices.Sorted(slices.Values(calls[0].GetContainers()[0].GetDeviceIds()))
			if !slices.Equal(got, tc.want) {
				t.Errorf("allocated %v, want %v", got, tc.want)
			}
			plugin.mu.Lock()
			preferred := plugin.preferred
			plugin.mu.Unlock()
			var offered []string
			if len(preferred) > 0 {
				offered = preferred[0].GetContainers()[0].GetAvailableDeviceIds()
			}
			if len(preferred) > 1 || !slices.Equal(offered, tc.offered) {
				t.Errorf("GetPreferredAllocation calls %v, want one offering %v", preferred, tc.offered)
			}
		})
	}
}
