package nodefacts

import (
	"fmt"
	"maps"
	"slices"

	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
)

// MemoryTable is one memory type on one NUMA node as the kubelet's memory
// manager keeps it (pkg/kubelet/cm/memorymanager/state): Total minus
// SystemReserved (and, for "memory", the hugepages) is Allocatable, of
// which Reserved is handed out and Free is not.
type MemoryTable struct {
	Total, SystemReserved, Allocatable, Reserved, Free uint64
}

// NUMANodeMemory is one NUMA node's memory: its tables by type
// ("memory", "hugepages-2Mi"), how many blocks use it and the group of
// nodes those blocks span (Cells; the node alone when unused).
type NUMANodeMemory struct {
	Assignments int
	Tables      map[string]*MemoryTable
	Cells       []int
}

// MemoryBlock is memory of one type on a group of NUMA nodes.
type MemoryBlock struct {
	NUMAAffinity []int
	Type         string
	Size         uint64
}

// MemoryAssignments are the blocks of each container by pod UID and
// container name.
type MemoryAssignments map[string]map[string][]MemoryBlock

// MemoryMachineState is the memory manager's machine state after the
// assignments, as upstream's static policy accounts them (validateState):
// each block takes from the free memory of its nodes in order, counts as
// one assignment on each, and groups them. The core and the memory
// manager's policy share it, so that what the state file says and what
// the policy hands out cannot disagree. A block on an unknown node or
// type, or one that does not fit in its nodes' free memory (memory handed
// out twice), is an error.
func MemoryMachineState(defaults map[int]map[string]MemoryTable, assigned MemoryAssignments) (MemoryState, error) {
	state := make(MemoryState, len(defaults))
	for id, tables := range defaults {
		n := &NUMANodeMemory{Tables: map[string]*MemoryTable{}, Cells: []int{id}}
		for t, table := range tables {
			table.Reserved, table.Free = 0, table.Allocatable
			n.Tables[t] = &table
		}
		state[id] = n
	}
	for _, pod := range slices.Sorted(maps.Keys(assigned)) {
		for _, container := range slices.Sorted(maps.Keys(assigned[pod])) {
			for _, b := range assigned[pod][container] {
				if err := state.Take(b); err != nil {
					return nil, fmt.Errorf("pod %s container %s: %w", pod, container, err)
				}
			}
		}
	}
	return state, nil
}

// MemoryState is a machine state by NUMA node ID.
type MemoryState map[int]*NUMANodeMemory

// Take accounts one more block.
func (s MemoryState) Take(b MemoryBlock) error {
	left := b.Size
	for _, id := range b.NUMAAffinity {
		n, ok := s[id]
		if !ok {
			return fmt.Errorf("the memory block uses NUMA node %d, which does not exist", id)
		}
		table, ok := n.Tables[b.Type]
		if !ok {
			return fmt.Errorf("the memory block uses memory type %q, which NUMA node %d does not have", b.Type, id)
		}
		n.Assignments++
		n.Cells = slices.Sorted(slices.Values(slices.Clone(b.NUMAAffinity)))
		used := min(left, table.Free)
		table.Reserved += used
		table.Free -= used
		left -= used
	}
	if left > 0 {
		return fmt.Errorf("%d bytes of %s on NUMA nodes %v do not fit in their free memory", b.Size, b.Type, b.NUMAAffinity)
	}
	return nil
}

// MemoryBlocksFromProto are blocks on the wire as the accounting takes
// them; never nil.
func MemoryBlocksFromProto(in []*cgroupv1.MemoryBlock) []MemoryBlock {
	out := make([]MemoryBlock, 0, len(in))
	for _, b := range in {
		var nodes []int
		for _, n := range b.GetNumaAffinity() {
			nodes = append(nodes, int(n))
		}
		out = append(out, MemoryBlock{NUMAAffinity: nodes, Type: b.GetType(), Size: b.GetSize()})
	}
	return out
}

// MemoryBlocksProto are blocks as the wire carries them, between the core
// and the memory manager's policy.
func MemoryBlocksProto(in []MemoryBlock) []*cgroupv1.MemoryBlock {
	var out []*cgroupv1.MemoryBlock
	for _, b := range in {
		mb := &cgroupv1.MemoryBlock{Type: b.Type, Size: b.Size}
		for _, n := range b.NUMAAffinity {
			mb.NumaAffinity = append(mb.NumaAffinity, int32(n))
		}
		out = append(out, mb)
	}
	return out
}

// NUMANodeIDs are the machine's NUMA nodes as the resource managers count
// them: those with memory, else those of the CPUs, else node 0 (what
// cAdvisor reports of a machine without NUMA); sorted. The planner hints
// over them and the core checks the hints' affinities against them.
func NUMANodeIDs(numa []*cgroupv1.NUMANode, cpus []*cgroupv1.CPUInfo) []int {
	seen := map[int]bool{}
	for _, n := range numa {
		seen[int(n.GetId())] = true
	}
	if len(seen) == 0 {
		for _, c := range cpus {
			seen[int(c.GetNumaNode())] = true
		}
	}
	if len(seen) == 0 {
		seen[0] = true
	}
	return slices.Sorted(maps.Keys(seen))
}
