package devices

import (
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
