package devices

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/types"
)

// NoNUMANode files devices attached to no NUMA node in the maps below.
const NoNUMANode = noNUMANode

// ContainerDevices are the devices a container holds, by resource and
// NUMA node, for the pod-resources API.
func (m *Manager) ContainerDevices(uid types.UID, container string) map[string]map[int64][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]map[int64][]string{}
	for resource, a := range m.allocations[uid][container] {
		out[resource] = map[int64][]string{}
		for node, ids := range a.devices {
			out[resource][node] = slices.Clone(ids)
		}
	}
	return out
}

// HealthyDevices are the healthy devices of every resource by NUMA node
// (upstream's allocatable devices), for the pod-resources API.
func (m *Manager) HealthyDevices() map[string]map[int64][]string {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := map[string]map[int64][]string{}
	for name, r := range m.resources {
		out[name] = map[int64][]string{}
		for _, id := range r.healthy() {
			nodes := r.devices[id].GetNumaNodes()
			if len(nodes) == 0 {
				nodes = []int64{noNUMANode}
			}
			for _, n := range nodes {
				out[name][n] = append(out[name][n], id)
			}
		}
	}
	return out
}

// Topology is one device of a resource as the topology manager's hints
// need it.
type Topology struct {
	ID        string
	NUMANodes []int64
	// Free: healthy and held by no pod.
	Free bool
}

// Devices are every device of resource, where it sits and whether it is
// free (what upstream's device manager makes its NUMA hints of); false
// when no devices plugin serves the resource.
func (m *Manager) Devices(resource string) ([]Topology, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	r := m.resources[resource]
	if r == nil {
		return nil, false
	}
	inUse := m.allocations.inUse(resource)
	healthy := map[string]bool{}
	for _, id := range r.healthy() {
		healthy[id] = true
	}
	var out []Topology
	for _, id := range slices.Sorted(maps.Keys(r.devices)) {
		out = append(out, Topology{ID: id, NUMANodes: slices.Clone(r.devices[id].GetNumaNodes()), Free: healthy[id] && !inUse.Has(id)})
	}
	return out, true
}
