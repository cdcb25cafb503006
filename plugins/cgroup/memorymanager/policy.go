// Package memorymanager decides what the kubelet's memory manager decides
// (pkg/kubelet/cm/memorymanager): under the "Static" policy, on which NUMA
// nodes the memory and hugepages of a Guaranteed pod's containers go,
// within the node's memory minus reserved_memory. It does no I/O: the
// core sends the NUMA nodes and what is already handed out, checks the
// answer, keeps memory_manager_state and writes cpuset.mems.
//
// docs/cgroups.md (Memory manager) describes the behaviour and the
// departures from upstream.
package memorymanager

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
	"github.com/microlet/microlet/sdk/nodefacts"
)

// The policies (memoryManagerPolicy), as named in the state file.
const (
	PolicyNone   = "None"
	PolicyStatic = "Static"
)

const (
	resourceMemory  = "memory"
	hugePagesPrefix = "hugepages-"
)

// Reservation is one reserved_memory entry: what the system keeps of one
// NUMA node's memory and hugepages, in bytes by type.
type Reservation struct {
	NUMANode int
	Limits   map[string]int64
}

// Policy is a validated memory manager configuration.
type Policy struct {
	Name     string
	Reserved []Reservation
}

// NewPolicy checks the kubelet's keys as upstream does at start, as far as
// they can be checked without the node (the NUMA nodes and node
// allocatable are checked by Tables).
func NewPolicy(name string, reserved []Reservation) (*Policy, error) {
	switch name {
	case PolicyNone, PolicyStatic:
	default:
		return nil, fmt.Errorf("unknown memory_manager_policy %q; expected %q or %q", name, PolicyNone, PolicyStatic)
	}
	var total int64
	for i, r := range reserved {
		if r.NUMANode < 0 {
			return nil, fmt.Errorf("reserved_memory[%d]: numa_node %d is negative", i, r.NUMANode)
		}
		for _, t := range slices.Sorted(maps.Keys(r.Limits)) {
			switch {
			case t != resourceMemory && !strings.HasPrefix(t, hugePagesPrefix):
				return nil, fmt.Errorf("reserved_memory[%d]: %q is not a memory type; expected memory or hugepages-<size>", i, t)
			case r.Limits[t] < 0:
				return nil, fmt.Errorf("reserved_memory[%d]: %s is negative", i, t)
			case t == resourceMemory:
				total += r.Limits[t]
			}
		}
	}
	if name == PolicyStatic && total <= 0 {
		// Upstream's words.
		return nil, fmt.Errorf("[memorymanager] you should specify the system reserved memory")
	}
	return &Policy{Name: name, Reserved: reserved}, nil
}

// Tables are what the policy may hand out of each NUMA node (upstream
// getDefaultMachineState), after the checks upstream makes at start
// (validateReservedMemory): every reservation names an existing node, and
// per memory type they add up to what node allocatable holds back
// (reserved, kube_reserved + system_reserved + the eviction thresholds;
// nil while node allocatable is not known). None under the None policy.
func (p *Policy) Tables(nodes []*cgroupv1.NUMANode, reserved map[string]int64) (map[int]map[string]nodefacts.MemoryTable, error) {
	if p.Name == PolicyNone {
		return nil, nil
	}
	exists := map[int]bool{}
	for _, n := range nodes {
		exists[int(n.GetId())] = true
	}
	perNode := map[int]map[string]uint64{}
	totals := map[string]int64{}
	for _, r := range p.Reserved {
		if !exists[r.NUMANode] {
			return nil, fmt.Errorf("the reserved memory configuration references a NUMA node %d that does not exist on this machine", r.NUMANode)
		}
		if perNode[r.NUMANode] == nil {
			perNode[r.NUMANode] = map[string]uint64{}
		}
		for t, v := range r.Limits {
			perNode[r.NUMANode][t] += uint64(v)
			totals[t] += v
		}
	}
	for _, t := range slices.Sorted(maps.Keys(mergeKeys(totals, reserved))) {
		if reserved != nil && totals[t] != reserved[t] {
			return nil, fmt.Errorf("the total amount %q of type %q is not equal to the value %q determined by Node Allocatable feature", fmt.Sprint(totals[t]), t, fmt.Sprint(reserved[t]))
		}
	}
	out := map[int]map[string]nodefacts.MemoryTable{}
	for _, n := range nodes {
		id := int(n.GetId())
		tables := map[string]nodefacts.MemoryTable{}
		var huge uint64
		for t, size := range n.GetHugepagesBytes() {
			res := perNode[id][t]
			if res > size {
				return nil, fmt.Errorf("reserved_memory holds back %d bytes of %s on NUMA node %d, which has %d", res, t, id, size)
			}
			tables[t] = nodefacts.MemoryTable{Total: size, SystemReserved: res, Allocatable: size - res}
			huge += size
		}
		res := perNode[id][resourceMemory]
		if res+huge > n.GetMemoryBytes() {
			return nil, fmt.Errorf("reserved_memory holds back %d bytes of memory on NUMA node %d, which has %d besides its hugepages", res, id, n.GetMemoryBytes()-huge)
		}
		tables[resourceMemory] = nodefacts.MemoryTable{Total: n.GetMemoryBytes(), SystemReserved: res, Allocatable: n.GetMemoryBytes() - res - huge}
		out[id] = tables
	}
	return out, nil
}

func mergeKeys(a, b map[string]int64) map[string]int64 {
	out := maps.Clone(a)
	for k, v := range b {
		out[k] = v
	}
	return out
}

// Describe is the policy for the plugin's log line.
func (p *Policy) Describe() string {
	var parts []string
	for _, r := range p.Reserved {
		for _, t := range slices.Sorted(maps.Keys(r.Limits)) {
			parts = append(parts, fmt.Sprintf("node%d:%s=%d", r.NUMANode, t, r.Limits[t]))
		}
	}
	return strings.TrimSpace(p.Name + " " + strings.Join(parts, ","))
}
