package planner

import (
	"errors"
	"maps"
	"slices"
	"strings"

	"github.com/microlet/microlet/plugins/cgroup/cpumanager"
	"github.com/microlet/microlet/plugins/cgroup/memorymanager"
	"github.com/microlet/microlet/plugins/cgroup/topology"
	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/nodefacts"
)

// Managers are the kubelet's resource managers: the topology manager and
// its hint providers, the devices, the CPU manager and the memory manager
// (upstream's order).
type Managers struct {
	CPU      *cpumanager.Policy
	Memory   *memorymanager.Policy
	Topology *topology.Policy
}

// Allocate answers AllocateCPUs: the topology manager admits the pod and
// the CPU and memory managers allocate within its hints. A pod the
// managers cannot serve is refused with their reason; a node the memory
// manager's configuration does not fit (reserved_memory naming a missing
// NUMA node, or not adding up to what node allocatable holds back) is an
// error for every pod, as upstream refuses to start.
func (m *Managers) Allocate(req *cgroupv1.AllocateCPUsRequest) (*cgroupv1.AllocateCPUsResponse, error) {
	resp := &cgroupv1.AllocateCPUsResponse{PolicyName: m.CPU.Name, MemoryPolicyName: m.Memory.Name, Admit: true}
	cpu, err := m.CPU.NewAllocator(req)
	if err != nil {
		return nil, err
	}
	resp.ReservedCpus, resp.StrictReservedCpus = cpu.Reserved()
	tables, err := m.Memory.Tables(req.GetNumaNodes(), nodeReserved(req.GetNode()))
	if err != nil {
		return nil, sdk.Invalid("memory_manager_policy %s: %v", m.Memory.Name, err)
	}
	for _, id := range slices.Sorted(maps.Keys(tables)) {
		n := &cgroupv1.NUMANodeMemory{Id: int32(id), Memory: map[string]*cgroupv1.MemoryTable{}}
		for t, table := range tables[id] {
			n.Memory[t] = &cgroupv1.MemoryTable{Total: table.Total, SystemReserved: table.SystemReserved, Allocatable: table.Allocatable}
		}
		resp.MemoryTables = append(resp.MemoryTables, n)
	}
	pod := req.GetPod()
	nodes := nodefacts.NUMANodeIDs(req.GetNumaNodes(), req.GetCpus())
	mem := m.Memory.NewAllocator(req, tables, PodQOS(pod) == Guaranteed)
	devices := topology.NewDevices(pod, nodes, req.GetDevices())
	providers := []topology.Provider{devices, cpu, mem}
	var refused *topology.AdmitError
	switch err := m.Topology.Admit(pod, nodes, providers); {
	case errors.As(err, &refused):
		return &cgroupv1.AllocateCPUsResponse{PolicyName: resp.PolicyName, MemoryPolicyName: resp.MemoryPolicyName, Reason: refused.Reason, Message: refused.Message}, nil
	case err != nil:
		return nil, err
	}
	resp.Assignments = cpu.Assignments
	resp.MemoryAssignments = mem.Result()
	resp.DeviceAffinities = devices.Affinities()
	return resp, nil
}

// nodeReserved is what node allocatable holds back of memory and each
// hugepage size (capacity minus allocatable); nil while allocatable is
// not known yet, which leaves the check to the first pod.
func nodeReserved(node *typesv1.Node) map[string]int64 {
	capacity, alloc := node.GetCapacity(), node.GetAllocatable()
	if alloc == nil {
		return nil
	}
	out := map[string]int64{"memory": capacity.GetMemoryBytes() - alloc.GetMemoryBytes()}
	for name, v := range capacity.GetOther() {
		if strings.HasPrefix(name, hugePagesPrefix) {
			out[name] = v - alloc.GetOther()[name]
		}
	}
	return out
}
