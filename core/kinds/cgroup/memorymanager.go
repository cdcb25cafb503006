package cgroup

import (
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/node/machine"
	"github.com/microlet/microlet/core/pods/podruntime"
	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
	"github.com/microlet/microlet/sdk/nodefacts"
)

// The memory manager's policies as its state file names them.
const (
	memoryPolicyNone   = "None"
	memoryPolicyStatic = "Static"
)

// Device is one device of an extended resource as the topology manager's
// hints need it: where it sits and whether it is free.
type Device struct {
	ID        string
	NUMANodes []int64
	Free      bool
}

// readNUMA is the node's NUMA nodes as the plugin sees them.
func readNUMA(sysfs string, capacity *machine.Capacity) ([]*cgroupv1.NUMANode, error) {
	var memTotal int64
	var pools map[v1.ResourceName]int64
	if capacity != nil {
		memTotal, pools = capacity.MemoryBytes, capacity.HugePages
	}
	nodes, err := machine.ReadNUMANodes(sysfs, memTotal, pools)
	if err != nil {
		return nil, err
	}
	var out []*cgroupv1.NUMANode
	for _, n := range nodes {
		wire := &cgroupv1.NUMANode{Id: int32(n.ID), MemoryBytes: n.MemoryBytes, HugepagesBytes: map[string]uint64{}}
		for name, bytes := range n.HugePages {
			wire.HugepagesBytes[string(name)] = uint64(bytes)
		}
		out = append(out, wire)
	}
	return out, nil
}

// checkNodes refuses a state whose tables name NUMA nodes the machine
// does not have.
func (s *memoryState) checkNodes(numa []*cgroupv1.NUMANode) error {
	for id := range s.tables {
		if !slices.ContainsFunc(numa, func(n *cgroupv1.NUMANode) bool { return int(n.GetId()) == id }) {
			return fmt.Errorf("the memory manager state has NUMA node %d, which this machine does not have", id)
		}
	}
	return nil
}

// memoryAssignments are the state's blocks as the plugin takes them.
func memoryAssignments(in nodefacts.MemoryAssignments) []*cgroupv1.MemoryAssignment {
	var out []*cgroupv1.MemoryAssignment
	for _, uid := range slices.Sorted(maps.Keys(in)) {
		for _, name := range slices.Sorted(maps.Keys(in[uid])) {
			out = append(out, &cgroupv1.MemoryAssignment{PodUid: uid, ContainerName: name, Blocks: nodefacts.MemoryBlocksProto(in[uid][name])})
		}
	}
	return out
}

// podDevices are the devices of every extended resource the pod asks for,
// for the topology manager's hints.
func (m *Manager) podDevices(pod *v1.Pod) []*cgroupv1.ResourceDevices {
	if m.opts.Devices == nil {
		return nil
	}
	names := map[string]bool{}
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		for name := range c.Resources.Limits {
			names[string(name)] = true
		}
	}
	var out []*cgroupv1.ResourceDevices
	for _, name := range slices.Sorted(maps.Keys(names)) {
		devices, ok := m.opts.Devices(name)
		if !ok {
			continue
		}
		r := &cgroupv1.ResourceDevices{Resource: name}
		for _, d := range devices {
			r.Devices = append(r.Devices, &cgroupv1.DeviceNUMA{Id: d.ID, NumaNodes: d.NUMANodes, Free: d.Free})
		}
		out = append(out, r)
	}
	return out
}

// checkMemory is the core's final say over the memory manager's answer:
// a known policy, tables only for the machine's NUMA nodes and unchanged
// while pods hold memory, blocks only for the pod's own containers, each
// once, and nothing handed out beyond what the tables allow. It answers
// the state the allocation leads to. Called with Manager.mu held.
func (c *cpuManager) checkMemory(pod *v1.Pod, resp *cgroupv1.AllocateCPUsResponse) (*memoryState, error) {
	policy := resp.GetMemoryPolicyName()
	if policy == "" {
		// A plugin without a memory manager: upstream's default.
		policy = memoryPolicyNone
	}
	if policy != memoryPolicyNone && policy != memoryPolicyStatic {
		return nil, fmt.Errorf("unknown memory manager policy %q", policy)
	}
	var tables map[int]map[string]nodefacts.MemoryTable
	for _, n := range resp.GetMemoryTables() {
		id := int(n.GetId())
		if !slices.ContainsFunc(c.numa, func(x *cgroupv1.NUMANode) bool { return int(x.GetId()) == id }) {
			return nil, fmt.Errorf("memory tables for NUMA node %d, which this machine does not have", id)
		}
		if tables == nil {
			tables = map[int]map[string]nodefacts.MemoryTable{}
		}
		tables[id] = map[string]nodefacts.MemoryTable{}
		for t, table := range n.GetMemory() {
			if t != string(v1.ResourceMemory) && !strings.HasPrefix(t, v1.ResourceHugePagesPrefix) {
				return nil, fmt.Errorf("memory tables for %q, not a memory type", t)
			}
			if table.GetAllocatable() > table.GetTotal() {
				return nil, fmt.Errorf("NUMA node %d: %d bytes of %s allocatable out of %d", id, table.GetAllocatable(), t, table.GetTotal())
			}
			tables[id][t] = nodefacts.MemoryTable{Total: table.GetTotal(), SystemReserved: table.GetSystemReserved(), Allocatable: table.GetAllocatable()}
		}
	}
	if (policy == memoryPolicyNone) != (tables == nil) {
		return nil, fmt.Errorf("memory manager policy %q with %d NUMA nodes' tables", policy, len(tables))
	}
	if len(c.memory.assigned) > 0 && (policy != c.memory.policy || !maps.EqualFunc(tables, c.memory.tables, maps.Equal)) {
		// Upstream refuses to start on a state of another policy or
		// reservation.
		return nil, fmt.Errorf("the memory manager policy or reserved memory changed from what %s says while pods hold memory; drain the node and remove it", c.memPath)
	}
	next := &memoryState{policy: policy, tables: tables, assigned: maps.Clone(c.memory.assigned)}
	names := containerNames(pod)
	for _, a := range resp.GetMemoryAssignments() {
		switch {
		case policy != memoryPolicyStatic:
			return nil, fmt.Errorf("memory manager policy %q assigns memory; only %q does", policy, memoryPolicyStatic)
		case a.GetPodUid() != string(pod.UID) || !slices.Contains(names, a.GetContainerName()):
			return nil, fmt.Errorf("it assigns memory to %s/%s, not a container of this pod", a.GetPodUid(), a.GetContainerName())
		case next.assigned[a.GetPodUid()][a.GetContainerName()] != nil:
			return nil, fmt.Errorf("container %q is assigned memory twice", a.GetContainerName())
		}
		if next.assigned[a.GetPodUid()] == nil {
			next.assigned[a.GetPodUid()] = map[string][]nodefacts.MemoryBlock{}
		}
		blocks := nodefacts.MemoryBlocksFromProto(a.GetBlocks())
		for _, b := range blocks {
			if len(b.NUMAAffinity) == 0 {
				return nil, fmt.Errorf("container %q gets %s on no NUMA node", a.GetContainerName(), b.Type)
			}
		}
		next.assigned[a.GetPodUid()][a.GetContainerName()] = blocks
	}
	if _, err := next.machine(); err != nil {
		return nil, err
	}
	return next, nil
}

// commitMemory saves a new memory state; an unchanged one is written only
// if the file is missing. Called with Manager.mu held.
func (c *cpuManager) commitMemory(next *memoryState) error {
	if next.policy == c.memory.policy && maps.EqualFunc(next.tables, c.memory.tables, maps.Equal) &&
		maps.EqualFunc(next.assigned, c.memory.assigned, func(a, b map[string][]nodefacts.MemoryBlock) bool {
			return maps.EqualFunc(a, b, func(x, y []nodefacts.MemoryBlock) bool {
				return slices.EqualFunc(x, y, func(p, q nodefacts.MemoryBlock) bool {
					return p.Type == q.Type && p.Size == q.Size && slices.Equal(p.NUMAAffinity, q.NUMAAffinity)
				})
			})
		}) {
		if _, err := os.Stat(c.memPath); err == nil {
			c.memory = next
			return nil
		}
	}
	if err := next.save(c.memPath); err != nil {
		return err
	}
	c.memory = next
	return nil
}

// releaseMemory returns a terminated pod's memory. Called with
// Manager.mu held.
func (c *cpuManager) releaseMemory(uid types.UID) error {
	if _, ok := c.memory.assigned[string(uid)]; !ok {
		return nil
	}
	next := &memoryState{policy: c.memory.policy, tables: c.memory.tables, assigned: maps.Clone(c.memory.assigned)}
	delete(next.assigned, string(uid))
	return c.commitMemory(next)
}

var _ podruntime.ContainerCreatedNotifier = (*Manager)(nil)

// ContainerCreated releases the memory of the pod's regular init
// containers before c, which have run to completion by the time c starts:
// upstream's memory manager AddContainer, which the kubelet calls between
// creating and starting each container. Their blocks hold only what the
// containers after them did not reuse (the plugin shrank them at
// admission), so that memory returns to the node; a sidecar's stays. A
// state that cannot be saved keeps the memory held until the pod ends.
func (m *Manager) ContainerCreated(pod *v1.Pod, c *v1.Container) {
	if m.cpu == nil {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	uid := string(pod.UID)
	held := m.cpu.memory.assigned[uid]
	var ended []string
	for _, ic := range pod.Spec.InitContainers {
		if ic.Name == c.Name {
			break
		}
		restartable := ic.RestartPolicy != nil && *ic.RestartPolicy == v1.ContainerRestartPolicyAlways
		if _, ok := held[ic.Name]; ok && !restartable {
			ended = append(ended, ic.Name)
		}
	}
	if len(ended) == 0 {
		return
	}
	next := &memoryState{policy: m.cpu.memory.policy, tables: m.cpu.memory.tables, assigned: maps.Clone(m.cpu.memory.assigned)}
	next.assigned[uid] = maps.Clone(held)
	for _, name := range ended {
		delete(next.assigned[uid], name)
	}
	if len(next.assigned[uid]) == 0 {
		delete(next.assigned, uid)
	}
	if err := m.cpu.commitMemory(next); err != nil {
		m.log.Warn("the memory of the pod's ended init containers stays held until the pod ends", "pod", podName(pod), "init_containers", ended, "error", err)
		return
	}
	m.log.Info("released the memory of the pod's ended init containers", "pod", podName(pod), "init_containers", ended, "starting", c.Name)
}

// memsFor is a container's cpuset.mems: the NUMA nodes of its memory,
// "" when none is pinned. Called with Manager.mu held.
func (c *cpuManager) memsFor(uid types.UID, container string) string {
	var parts []string
	for _, n := range c.memory.nodes(string(uid), container) {
		parts = append(parts, strconv.Itoa(n))
	}
	return strings.Join(parts, ",")
}

// ContainerMemory is a container's pinned memory (the kubelet's
// GetMemory), for the pod-resources API.
func (m *Manager) ContainerMemory(uid types.UID, container string) []nodefacts.MemoryBlock {
	if m.cpu == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return slices.Clone(m.cpu.memory.assigned[string(uid)][container])
}

// AllocatableMemory is what the memory manager may hand out, one block per
// NUMA node and type (the kubelet's GetAllocatableMemory); none under the
// None policy.
func (m *Manager) AllocatableMemory() []nodefacts.MemoryBlock {
	if m.cpu == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []nodefacts.MemoryBlock
	for _, id := range slices.Sorted(maps.Keys(m.cpu.memory.tables)) {
		for _, t := range slices.Sorted(maps.Keys(m.cpu.memory.tables[id])) {
			if a := m.cpu.memory.tables[id][t].Allocatable; a > 0 {
				out = append(out, nodefacts.MemoryBlock{NUMAAffinity: []int{id}, Type: t, Size: a})
			}
		}
	}
	return out
}

// StaticMemoryPolicy reports whether the memory manager's Static policy
// is in force, for the resize decision (upstream's canResizePod).
func (m *Manager) StaticMemoryPolicy() bool {
	if m.cpu == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cpu.memory.policy == memoryPolicyStatic
}
