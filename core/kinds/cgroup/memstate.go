package cgroup

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/sdk/nodefacts"
)

// memoryStateFile is the kubelet's memory manager checkpoint, in its root
// dir.
const memoryStateFile = "memory_manager_state"

// MemoryManagerCheckpoint and the types below are the kubelet's state file
// (pkg/kubelet/cm/memorymanager/state). Their names matter: the checksum
// is an FNV-32a hash of a dump of the checkpoint, type names included, as
// upstream's checkpoint manager computes it.
type MemoryManagerCheckpoint struct {
	PolicyName   string                     `json:"policyName"`
	MachineState NUMANodeMap                `json:"machineState"`
	Entries      ContainerMemoryAssignments `json:"entries,omitempty"`
	Checksum     Checksum                   `json:"checksum"`
}

// NUMANodeMap is upstream's state.NUMANodeMap.
type NUMANodeMap map[int]*NUMANodeState

// NUMANodeState is upstream's state.NUMANodeState.
type NUMANodeState struct {
	NumberOfAssignments int                              `json:"numberOfAssignments"`
	MemoryMap           map[v1.ResourceName]*MemoryTable `json:"memoryMap"`
	Cells               []int                            `json:"cells"`
}

// MemoryTable is upstream's state.MemoryTable.
type MemoryTable struct {
	TotalMemSize   uint64 `json:"total"`
	SystemReserved uint64 `json:"systemReserved"`
	Allocatable    uint64 `json:"allocatable"`
	Reserved       uint64 `json:"reserved"`
	Free           uint64 `json:"free"`
}

// ContainerMemoryAssignments is upstream's state.ContainerMemoryAssignments.
type ContainerMemoryAssignments map[string]map[string][]Block

// Block is upstream's state.Block.
type Block struct {
	NUMAAffinity []int           `json:"numaAffinity"`
	Type         v1.ResourceName `json:"type"`
	Size         uint64          `json:"size"`
}

// sum is upstream's checksum.New of the checkpoint with Checksum 0.
func (cp MemoryManagerCheckpoint) sum() Checksum {
	cp.Checksum = 0
	return kubeletChecksum(&cp, "MemoryManagerCheckpoint", "NUMANodeMap", "NUMANodeState", "MemoryTable", "ContainerMemoryAssignments", "Block")
}

// memoryState is what the memory manager keeps: the policy's name, what
// it may hand out of each NUMA node (the tables before assignments) and
// the blocks of each container.
type memoryState struct {
	policy   string
	tables   map[int]map[string]nodefacts.MemoryTable
	assigned nodefacts.MemoryAssignments
}

// machine is the state's machine state, as upstream accounts it.
func (s *memoryState) machine() (nodefacts.MemoryState, error) {
	return nodefacts.MemoryMachineState(s.tables, s.assigned)
}

// nodes are the NUMA nodes a container's memory is on; nil when it has
// none pinned.
func (s *memoryState) nodes(uid, container string) []int {
	var out []int
	for _, b := range s.assigned[uid][container] {
		out = append(out, b.NUMAAffinity...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// loadMemoryState reads the state file; none is an empty state. A file
// that fails its checksum, does not parse, or whose machine state is not
// what its assignments make of its tables is an error, as upstream
// refuses to start on it: handing memory out without knowing what is
// taken could hand it out twice.
func loadMemoryState(path string) (*memoryState, error) {
	s := &memoryState{assigned: nodefacts.MemoryAssignments{}}
	raw, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return s, nil
	} else if err != nil {
		return nil, fmt.Errorf("read the memory manager state: %w", err)
	}
	drain := func(why string, args ...any) error {
		return fmt.Errorf("the memory manager state %s %s; drain the node and remove it", path, fmt.Sprintf(why, args...))
	}
	cp := MemoryManagerCheckpoint{MachineState: NUMANodeMap{}, Entries: ContainerMemoryAssignments{}}
	if err := json.Unmarshal(raw, &cp); err != nil {
		return nil, drain("does not parse (%v)", err)
	}
	if cp.Checksum != cp.sum() {
		return nil, drain("fails its checksum")
	}
	s.policy = cp.PolicyName
	if len(cp.MachineState) > 0 {
		s.tables = map[int]map[string]nodefacts.MemoryTable{}
	}
	for id, n := range cp.MachineState {
		s.tables[id] = map[string]nodefacts.MemoryTable{}
		for t, table := range n.MemoryMap {
			s.tables[id][string(t)] = nodefacts.MemoryTable{Total: table.TotalMemSize, SystemReserved: table.SystemReserved, Allocatable: table.Allocatable}
		}
	}
	for pod, containers := range cp.Entries {
		s.assigned[pod] = map[string][]nodefacts.MemoryBlock{}
		for name, blocks := range containers {
			for _, b := range blocks {
				s.assigned[pod][name] = append(s.assigned[pod][name], nodefacts.MemoryBlock{NUMAAffinity: b.NUMAAffinity, Type: string(b.Type), Size: b.Size})
			}
		}
	}
	if len(s.assigned) > 0 && s.tables == nil {
		return nil, drain("has memory assignments but no machine state")
	}
	want, err := s.machine()
	if err != nil {
		return nil, drain("is inconsistent: %v", err)
	}
	if !sameMachine(checkpointOf(s.policy, want, nil).MachineState, cp.MachineState) {
		return nil, drain("has a machine state that is not what its assignments make of it")
	}
	return s, nil
}

// sameMachine compares two machine states as upstream's validateState
// does: per node the assignments, groups and tables, and the reserved and
// free memory summed over each node's group (how a block spanning nodes
// is split among them depends on the order it was taken in).
func sameMachine(a, b NUMANodeMap) bool {
	if !slices.Equal(slices.Sorted(maps.Keys(a)), slices.Sorted(maps.Keys(b))) {
		return false
	}
	for id, na := range a {
		nb := b[id]
		if nb == nil || na.NumberOfAssignments != nb.NumberOfAssignments || !slices.Equal(slices.Sorted(slices.Values(na.Cells)), slices.Sorted(slices.Values(nb.Cells))) ||
			!slices.Equal(slices.Sorted(maps.Keys(na.MemoryMap)), slices.Sorted(maps.Keys(nb.MemoryMap))) {
			return false
		}
		for t, ta := range na.MemoryMap {
			tb := nb.MemoryMap[t]
			if ta.TotalMemSize != tb.TotalMemSize || ta.SystemReserved != tb.SystemReserved || ta.Allocatable != tb.Allocatable {
				return false
			}
			var resA, freeA, resB, freeB uint64
			for _, cell := range na.Cells {
				if a[cell] == nil || b[cell] == nil || a[cell].MemoryMap[t] == nil || b[cell].MemoryMap[t] == nil {
					return false
				}
				resA, freeA = resA+a[cell].MemoryMap[t].Reserved, freeA+a[cell].MemoryMap[t].Free
				resB, freeB = resB+b[cell].MemoryMap[t].Reserved, freeB+b[cell].MemoryMap[t].Free
			}
			if resA != resB || freeA != freeB {
				return false
			}
		}
	}
	return true
}

// checkpointOf is the state file of a machine state and assignments.
func checkpointOf(policy string, machine nodefacts.MemoryState, assigned nodefacts.MemoryAssignments) MemoryManagerCheckpoint {
	cp := MemoryManagerCheckpoint{PolicyName: policy, MachineState: NUMANodeMap{}, Entries: ContainerMemoryAssignments{}}
	for id, n := range machine {
		st := &NUMANodeState{NumberOfAssignments: n.Assignments, MemoryMap: map[v1.ResourceName]*MemoryTable{}, Cells: slices.Clone(n.Cells)}
		for t, table := range n.Tables {
			st.MemoryMap[v1.ResourceName(t)] = &MemoryTable{TotalMemSize: table.Total, SystemReserved: table.SystemReserved, Allocatable: table.Allocatable, Reserved: table.Reserved, Free: table.Free}
		}
		cp.MachineState[id] = st
	}
	for pod, containers := range assigned {
		cp.Entries[pod] = map[string][]Block{}
		for name, blocks := range containers {
			for _, b := range blocks {
				cp.Entries[pod][name] = append(cp.Entries[pod][name], Block{NUMAAffinity: slices.Clone(b.NUMAAffinity), Type: v1.ResourceName(b.Type), Size: b.Size})
			}
		}
	}
	return cp
}

// save writes the state file.
func (s *memoryState) save(path string) error {
	machine, err := s.machine()
	if err != nil {
		return fmt.Errorf("write the memory manager state: %w", err)
	}
	cp := checkpointOf(s.policy, machine, s.assigned)
	cp.Checksum = cp.sum()
	return writeCheckpoint(path, cp)
}
