package memorymanager

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	topo "github.com/microlet/microlet/plugins/cgroup/topology"
	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk/nodefacts"
)

// Allocator is the static policy for one admission: the node's tables,
// the memory other pods hold, and what the pod's containers got. It is the
// topology manager's memory hint provider.
type Allocator struct {
	p          *Policy
	pod        *typesv1.Pod
	guaranteed bool
	nodes      []int
	tables     map[int]map[string]nodefacts.MemoryTable
	others     nodefacts.MemoryAssignments
	// own are the pod's containers' blocks so far, in the order they got
	// them; a regular init container's shrink as later containers reuse
	// its memory (upstream updateInitContainersMemoryBlocks).
	own   map[string][]nodefacts.MemoryBlock
	order []string
}

// NewAllocator starts an admission of req's pod on the node's tables.
// guaranteed is the pod's QoS class being Guaranteed: the static policy
// pins the memory of those only.
func (p *Policy) NewAllocator(req *cgroupv1.AllocateCPUsRequest, tables map[int]map[string]nodefacts.MemoryTable, guaranteed bool) *Allocator {
	a := &Allocator{p: p, pod: req.GetPod(), guaranteed: guaranteed, tables: tables, others: Assignments(req.GetMemoryAssigned()), own: map[string][]nodefacts.MemoryBlock{}}
	a.nodes = slices.Sorted(maps.Keys(tables))
	return a
}

// Assignments are the wire's assignments as the accounting takes them.
func Assignments(in []*cgroupv1.MemoryAssignment) nodefacts.MemoryAssignments {
	out := nodefacts.MemoryAssignments{}
	for _, as := range in {
		if out[as.GetPodUid()] == nil {
			out[as.GetPodUid()] = map[string][]nodefacts.MemoryBlock{}
		}
		if blocks := as.GetBlocks(); len(blocks) > 0 {
			out[as.GetPodUid()][as.GetContainerName()] = append(out[as.GetPodUid()][as.GetContainerName()], nodefacts.MemoryBlocksFromProto(blocks)...)
		}
	}
	return out
}

// Result are the pod's containers' memory, for the answer.
func (a *Allocator) Result() []*cgroupv1.MemoryAssignment {
	var out []*cgroupv1.MemoryAssignment
	for _, name := range a.order {
		out = append(out, &cgroupv1.MemoryAssignment{PodUid: a.pod.GetUid(), ContainerName: name, Blocks: nodefacts.MemoryBlocksProto(a.own[name])})
	}
	return out
}

// state is the machine state with what the pod got so far.
func (a *Allocator) state() (nodefacts.MemoryState, error) {
	all := maps.Clone(a.others)
	all[a.pod.GetUid()] = a.own
	return nodefacts.MemoryMachineState(a.tables, all)
}

// pins reports whether the policy pins the pod's memory: the static
// policy, a Guaranteed pod, no pod-level resources (upstream skips those).
func (a *Allocator) pins() bool {
	return a.p.Name == PolicyStatic && a.guaranteed && a.pod.GetPodResources() == nil
}

// requests are a container's memory and hugepages requests in bytes.
func requests(c *typesv1.Container) map[string]uint64 {
	out := map[string]uint64{}
	r := c.GetResources().GetRequests()
	if r.MemoryBytes != nil {
		out[resourceMemory] = uint64(r.GetMemoryBytes())
	}
	for name, v := range r.GetOther() {
		if strings.HasPrefix(name, hugePagesPrefix) {
			out[name] = uint64(v)
		}
	}
	return out
}

// podRequests are the most memory the pod holds at once, its init
// containers running one after another (upstream getPodRequestedResources).
func (a *Allocator) podRequests() map[string]uint64 {
	byInit, byRestartable, byApp := map[string]uint64{}, map[string]uint64{}, map[string]uint64{}
	for _, c := range a.pod.GetInitContainers() {
		for t, v := range requests(c) {
			if c.GetRestartable() {
				byRestartable[t] += v
			} else {
				byInit[t] = max(byInit[t], byRestartable[t]+v)
			}
		}
	}
	for _, c := range a.pod.GetContainers() {
		for t, v := range requests(c) {
			byApp[t] += v
		}
	}
	out := map[string]uint64{}
	for t, v := range byApp {
		out[t] = max(v+byRestartable[t], byInit[t])
	}
	return out
}

// ContainerHints are the memory hints of one container (upstream
// GetTopologyHints); nil when the policy does not pin its memory.
func (a *Allocator) ContainerHints(c *typesv1.Container) topo.Hints {
	if !a.pins() {
		return nil
	}
	return a.hints(requests(c))
}

// PodHints are the memory hints of the whole pod (upstream
// GetPodTopologyHints).
func (a *Allocator) PodHints() topo.Hints {
	if !a.pins() {
		return nil
	}
	return a.hints(a.podRequests())
}

// hints are the groups of NUMA nodes whose free memory (with what the
// pod's ended init containers leave) holds every requested type
// (upstream calculateHints); preferred when as small as any group whose
// allocatable memory could hold it.
func (a *Allocator) hints(req map[string]uint64) topo.Hints {
	state, err := a.state()
	if err != nil {
		return topo.Hints{resourceMemory: {}}
	}
	hints := topo.Hints{}
	minSize := len(a.nodes)
	topo.Masks(a.nodes, func(m topo.Mask) {
		bits := m.Nodes()
		free, alloc := map[string]uint64{}, map[string]uint64{}
		for _, n := range bits {
			for t := range req {
				if table := state[n].Tables[t]; table != nil {
					free[t] += table.Free
					alloc[t] += table.Allocatable
				}
			}
		}
		for t, v := range req {
			if alloc[t] < v {
				return
			}
		}
		minSize = min(minSize, m.Count())
		single := len(bits) == 1
		if single && len(state[bits[0]].Cells) > 1 {
			return
		}
		for _, n := range bits {
			if !single && state[n].Assignments > 0 && (len(state[n].Cells) == 1 || !slices.Equal(state[n].Cells, bits)) {
				return
			}
		}
		for t, v := range req {
			if free[t]+a.reusable(m, t) < v {
				return
			}
		}
		for t := range req {
			hints[t] = append(hints[t], topo.Hint{Affinity: m})
		}
	})
	for t := range req {
		if hints[t] == nil {
			hints[t] = []topo.Hint{}
		}
		for i := range hints[t] {
			hints[t][i].Preferred = hints[t][i].Affinity.Count() == minSize
		}
	}
	return hints
}

// reusable is the memory of type t on exactly the nodes of m that the
// pod's regular init containers hold and later containers may take.
func (a *Allocator) reusable(m topo.Mask, t string) uint64 {
	var sum uint64
	for _, c := range a.pod.GetInitContainers() {
		if c.GetRestartable() {
			continue
		}
		for _, b := range a.own[c.GetName()] {
			if mask, _ := topo.NewMask(b.NUMAAffinity...); mask == m && b.Type == t {
				sum += b.Size
			}
		}
	}
	return sum
}

// Allocate gives c its memory on the hint's nodes, or on the best nodes
// when the hint has none or too little room (upstream staticPolicy.Allocate).
func (a *Allocator) Allocate(c *typesv1.Container, hint topo.Hint) error {
	if !a.pins() || a.own[c.GetName()] != nil {
		return nil
	}
	req := requests(c)
	if len(req) == 0 {
		return nil
	}
	state, err := a.state()
	if err != nil {
		return fmt.Errorf("[memorymanager] %w", err)
	}
	best := hint
	if hint.Affinity == 0 {
		candidates := a.hints(req)[resourceMemory]
		if len(candidates) == 0 {
			return errors.New("[memorymanager] failed to get the default NUMA affinity, no NUMA nodes with enough memory is available")
		}
		def := bestHint(candidates)
		if !def.Preferred && hint.Preferred {
			return errors.New("[memorymanager] failed to find the default preferred hint")
		}
		best = def
	}
	if !fits(state, best.Affinity, req) {
		var within []topo.Hint
		for _, h := range a.hints(req)[resourceMemory] {
			if h.Affinity&best.Affinity == best.Affinity {
				within = append(within, h)
			}
		}
		if len(within) == 0 {
			return errors.New("[memorymanager] failed to find NUMA nodes to extend the current topology hint")
		}
		ext := bestHint(within)
		if !ext.Preferred && best.Preferred {
			return errors.New("[memorymanager] failed to find the extended preferred hint")
		}
		best = ext
	}
	if violates(state, best.Affinity) {
		return errors.New("[memorymanager] preferred hint violates NUMA node allocation")
	}
	nodes := best.Affinity.Nodes()
	var blocks []nodefacts.MemoryBlock
	for _, t := range slices.Sorted(maps.Keys(req)) {
		blocks = append(blocks, nodefacts.MemoryBlock{NUMAAffinity: nodes, Type: t, Size: req[t]})
	}
	a.shrinkInitBlocks(c, blocks)
	a.own[c.GetName()] = blocks
	a.order = append(a.order, c.GetName())
	if _, err := a.state(); err != nil {
		return fmt.Errorf("[memorymanager] %w", err)
	}
	return nil
}

// shrinkInitBlocks takes c's memory out of the blocks of the regular init
// containers before it on the same nodes, which have ended by the time c
// runs (upstream updateInitContainersMemoryBlocks).
func (a *Allocator) shrinkInitBlocks(c *typesv1.Container, blocks []nodefacts.MemoryBlock) {
	for _, b := range blocks {
		left := b.Size
		for _, ic := range a.pod.GetInitContainers() {
			if ic.GetName() == c.GetName() || left == 0 {
				break
			}
			if ic.GetRestartable() {
				continue
			}
			own := a.own[ic.GetName()]
			for i := range own {
				if own[i].Type != b.Type || !slices.Equal(own[i].NUMAAffinity, b.NUMAAffinity) {
					continue
				}
				used := min(own[i].Size, left)
				own[i].Size -= used
				left -= used
			}
		}
	}
}

// fits reports whether the nodes of m have req free.
func fits(state nodefacts.MemoryState, m topo.Mask, req map[string]uint64) bool {
	free := map[string]uint64{}
	for _, n := range m.Nodes() {
		for t := range req {
			if state[n] == nil || state[n].Tables[t] == nil {
				continue
			}
			free[t] += state[n].Tables[t].Free
		}
	}
	for t, v := range req {
		if free[t] < v {
			return false
		}
	}
	return true
}

// violates reports whether a group of nodes m would mix with nodes used
// alone or in another group (upstream isAffinityViolatingNUMAAllocations).
func violates(state nodefacts.MemoryState, m topo.Mask) bool {
	bits := m.Nodes()
	if len(bits) == 1 {
		return false
	}
	for _, n := range bits {
		if state[n] == nil || state[n].Assignments == 0 {
			continue
		}
		if len(state[n].Cells) == 1 || !slices.Equal(state[n].Cells, bits) {
			return true
		}
	}
	return false
}

// bestHint is the first preferred, narrowest hint (upstream findBestHint).
func bestHint(hints []topo.Hint) topo.Hint {
	var best topo.Hint
	for _, h := range hints {
		switch {
		case best.Affinity == 0:
			best = h
		case h.Preferred && !best.Preferred:
			best = h
		case h.Preferred == best.Preferred && h.Affinity.NarrowerThan(best.Affinity):
			best = h
		}
	}
	return best
}
