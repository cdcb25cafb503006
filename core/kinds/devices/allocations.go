package devices

import (
	"maps"
	"slices"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	devicesv1 "github.com/microlet/microlet/proto/microlet/devices/v1"
)

// noNUMANode is upstream's nodeWithoutTopology: where devices without NUMA
// nodes are filed.
const noNUMANode = -1

// devicesPerNUMA are device IDs by the NUMA node they are attached to, as
// upstream's checkpoint keeps them.
type devicesPerNUMA map[int64][]string

// ids are the device IDs, sorted, each once.
func (d devicesPerNUMA) ids() []string {
	all := sets.New[string]()
	for _, ids := range d {
		all.Insert(ids...)
	}
	return sets.List(all)
}

// allocation is what one container holds of one resource.
type allocation struct {
	// owner is the plugin that allocated the devices; PreStartContainer
	// goes to it.
	owner            string
	preStartRequired bool
	devices          devicesPerNUMA
	// response is what the plugin's Allocate answered for the container.
	response *devicesv1.ContainerAllocateResponse
}

// podAllocations are the allocations by pod, container and resource.
type podAllocations map[types.UID]map[string]map[string]*allocation

func (p podAllocations) get(pod types.UID, container, resource string) *allocation {
	return p[pod][container][resource]
}

func (p podAllocations) set(pod types.UID, container, resource string, a *allocation) {
	if p[pod] == nil {
		p[pod] = map[string]map[string]*allocation{}
	}
	if p[pod][container] == nil {
		p[pod][container] = map[string]*allocation{}
	}
	p[pod][container][resource] = a
}

func (p podAllocations) remove(pod types.UID, container, resource string) {
	delete(p[pod][container], resource)
	if len(p[pod][container]) == 0 {
		delete(p[pod], container)
	}
	if len(p[pod]) == 0 {
		delete(p, pod)
	}
}

// container is a copy of one container's allocations, by resource.
func (p podAllocations) container(pod types.UID, container string) map[string]*allocation {
	return maps.Clone(p[pod][container])
}

// inUse are the device IDs of resource allocated to any container.
func (p podAllocations) inUse(resource string) sets.Set[string] {
	out := sets.New[string]()
	for _, containers := range p {
		for _, resources := range containers {
			if a := resources[resource]; a != nil {
				out.Insert(a.devices.ids()...)
			}
		}
	}
	return out
}

// containerDevices are the device IDs one container holds, by resource.
func (p podAllocations) containerDevices(pod types.UID, container string) map[string][]string {
	out := map[string][]string{}
	for resource, a := range p[pod][container] {
		out[resource] = a.devices.ids()
	}
	return out
}

// sortedKeys are a map's keys in order.
func sortedKeys[V any](m map[string]V) []string {
	return slices.Sorted(maps.Keys(m))
}
