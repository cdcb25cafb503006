package cgroup

import (
	"fmt"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
	"github.com/microlet/microlet/sdk/nodefacts"
)

// checkAffinities is the core's say over the topology manager's device
// affinities: for the pod's own containers, each once, on NUMA nodes the
// machine has. It answers them by container, nil when there are none.
func (c *cpuManager) checkAffinities(pod *v1.Pod, resp *cgroupv1.AllocateCPUsResponse) (map[string][]int64, error) {
	var out map[string][]int64
	names, known := containerNames(pod), nodefacts.NUMANodeIDs(c.numa, c.infos)
	for _, a := range resp.GetDeviceAffinities() {
		name := a.GetContainerName()
		switch {
		case !slices.Contains(names, name):
			return nil, fmt.Errorf("it gives a device affinity to container %q, not one of this pod's", name)
		case out[name] != nil:
			return nil, fmt.Errorf("container %q has two device affinities", name)
		case len(a.GetNumaNodes()) == 0:
			return nil, fmt.Errorf("container %q has a device affinity of no NUMA node", name)
		}
		nodes := make([]int64, 0, len(a.GetNumaNodes()))
		for _, n := range a.GetNumaNodes() {
			if !slices.Contains(known, int(n)) {
				return nil, fmt.Errorf("container %q has a device affinity to NUMA node %d, which this machine does not have (it has %v)", name, n, known)
			}
			nodes = append(nodes, int64(n))
		}
		if out == nil {
			out = map[string][]int64{}
		}
		out[name] = nodes
	}
	return out, nil
}

// forgetAffinities drops the device affinities of pods neither pod nor
// admitted (refused by a later admitter, or gone). Called with Manager.mu
// held.
func (c *cpuManager) forgetAffinities(pod *v1.Pod, admitted []*v1.Pod) {
	for uid := range c.affinity {
		if uid != string(pod.UID) && !slices.ContainsFunc(admitted, func(p *v1.Pod) bool { return string(p.UID) == uid }) {
			delete(c.affinity, uid)
		}
	}
}

// keepAffinities records a newly admitted pod's device affinities, in
// place of any it had. Called with Manager.mu held.
func (c *cpuManager) keepAffinities(uid types.UID, affinities map[string][]int64) {
	if affinities == nil {
		delete(c.affinity, string(uid))
		return
	}
	c.affinity[string(uid)] = affinities
}

// ContainerAffinity are the NUMA nodes the topology manager chose for a
// container of an admitted pod that asks for devices: the devices manager
// picks its devices on them first, as upstream's device manager reads the
// topology manager's affinity. Nil: no preference (no topology manager, a
// hint without one, or a pod admitted before the core restarted, whose
// devices come from the checkpoint).
func (m *Manager) ContainerAffinity(uid types.UID, container string) []int64 {
	if m.cpu == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.cpu.affinity[string(uid)][container])
}
