// Package cpumanager decides what the kubelet's CPU manager decides
// (pkg/kubelet/cm/cpumanager): under the "static" policy, which containers
// of a Guaranteed pod get CPUs for themselves and which. It does no I/O:
// the core sends the node's CPUs and the exclusive CPUs already handed
// out, checks the answer, keeps the state and writes the cpusets.
//
// docs/cgroups.md (CPU manager) describes the behaviour and the departures
// from upstream.
package cpumanager

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"sort"
	"strings"

	topo "github.com/microlet/microlet/plugins/cgroup/topology"
	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk/nodefacts"
)

// The policies (cpuManagerPolicy) and their names in the state file.
const (
	PolicyNone   = "none"
	PolicyStatic = "static"
)

// The static policy's options (cpuManagerPolicyOptions) microlet has;
// upstream's others concern several NUMA nodes, sockets or uncore caches.
const (
	// OptionFullPCPUsOnly: a container gets whole physical cores only.
	OptionFullPCPUsOnly = "full-pcpus-only"
	// OptionStrictCPUReservation: the reserved CPUs leave the shared pool
	// too, so that no pod runs on them.
	OptionStrictCPUReservation = "strict-cpu-reservation"
)

// Admission reasons as upstream's (pkg/kubelet/cm/cpumanager and
// pkg/kubelet/lifecycle).
const (
	ReasonSMTAlignmentError        = "SMTAlignmentError"
	ReasonUnexpectedAdmissionError = "UnexpectedAdmissionError"
)

// Policy is a validated CPU manager configuration.
type Policy struct {
	Name string
	// FullPCPUsOnly and StrictReservation are the options set to "true".
	FullPCPUsOnly, StrictReservation bool
	// Reserved is reserved_system_cpus; when empty the static policy
	// reserves ReservedMillis (kube_reserved + system_reserved cpu),
	// rounded up to whole CPUs, as upstream.
	Reserved       string
	ReservedMillis int64
}

// NewPolicy checks the kubelet's keys as upstream does at start.
func NewPolicy(name string, options map[string]string, reserved string, reservedMillis int64) (*Policy, error) {
	p := &Policy{Name: name, Reserved: reserved, ReservedMillis: reservedMillis}
	if _, err := parseCPUs(reserved); err != nil {
		return nil, fmt.Errorf("reserved_system_cpus: %w", err)
	}
	switch name {
	case PolicyNone:
		if len(options) > 0 {
			return nil, fmt.Errorf("cpu_manager_policy_options are only valid with the %q policy", PolicyStatic)
		}
		return p, nil
	case PolicyStatic:
	default:
		return nil, fmt.Errorf("unknown cpu_manager_policy %q; expected %q or %q", name, PolicyNone, PolicyStatic)
	}
	for _, key := range slices.Sorted(maps.Keys(options)) {
		on := options[key] == "true"
		if !on && options[key] != "false" {
			return nil, fmt.Errorf("cpu_manager_policy_options[%q]: %q is not a boolean", key, options[key])
		}
		switch key {
		case OptionFullPCPUsOnly:
			p.FullPCPUsOnly = on
		case OptionStrictCPUReservation:
			p.StrictReservation = on
		default:
			return nil, fmt.Errorf("cpu_manager_policy_options: unsupported option %q; expected %s or %s", key, OptionFullPCPUsOnly, OptionStrictCPUReservation)
		}
	}
	if reserved == "" && reservedMillis <= 0 {
		// Upstream: "the static policy requires systemreserved.cpu +
		// kubereserved.cpu to be greater than zero".
		return nil, fmt.Errorf("the %q cpu_manager_policy requires reserved_system_cpus, or kube_reserved + system_reserved cpu greater than zero", PolicyStatic)
	}
	return p, nil
}

// topology is the node's CPUs by physical core.
type topology struct {
	all cpuSet
	// cores lists each physical core's CPUs, in (socket, core) order.
	cores []cpuSet
	// coreOf maps a CPU to its index in cores.
	coreOf map[int]int
}

func newTopology(cpus []*cgroupv1.CPUInfo) topology {
	type key struct{ socket, core int32 }
	byCore := map[key]cpuSet{}
	var keys []key
	t := topology{coreOf: map[int]int{}}
	for _, c := range cpus {
		k := key{c.GetSocketId(), c.GetCoreId()}
		if _, ok := byCore[k]; !ok {
			keys = append(keys, k)
		}
		byCore[k] = append(byCore[k], int(c.GetId()))
		t.all = append(t.all, int(c.GetId()))
	}
	slices.Sort(t.all)
	sort.Slice(keys, func(i, j int) bool {
		return keys[i].socket < keys[j].socket || keys[i].socket == keys[j].socket && keys[i].core < keys[j].core
	})
	for i, k := range keys {
		core := byCore[k]
		slices.Sort(core)
		t.cores = append(t.cores, core)
		for _, id := range core {
			t.coreOf[id] = i
		}
	}
	return t
}

// threadsPerCore is upstream's CPUsPerCore: CPUs over cores.
func (t topology) threadsPerCore() int {
	if len(t.cores) == 0 {
		return 1
	}
	return len(t.all) / len(t.cores)
}

// reservedCPUs is what no container gets for itself: reserved_system_cpus,
// or the first whole cores covering the reserved millicores.
func (p *Policy) reservedCPUs(t topology) (cpuSet, error) {
	if p.Reserved != "" {
		set, _ := parseCPUs(p.Reserved)
		if missing := set.difference(t.all); len(missing) > 0 {
			return nil, fmt.Errorf("reserved_system_cpus %s are not online CPUs of this node (%s)", set, t.all)
		}
		return set, nil
	}
	n := int(math.Ceil(float64(p.ReservedMillis) / 1000))
	set, ok := take(t, t.all, n)
	if !ok {
		return nil, fmt.Errorf("cannot reserve %d CPUs out of %d", n, len(t.all))
	}
	return set, nil
}

// Allocator is the CPU manager for one admission: the node's CPUs, what
// is free, and what the pod's containers got. It is the topology
// manager's CPU hint provider.
type Allocator struct {
	p        *Policy
	t        topology
	pod      *typesv1.Pod
	reserved cpuSet
	free     cpuSet
	// numa is each CPU's NUMA node.
	numa map[int]int
	// Assignments are what the pod's containers got so far.
	Assignments []*cgroupv1.CPUAssignment
}

// NewAllocator starts an admission of req's pod.
func (p *Policy) NewAllocator(req *cgroupv1.AllocateCPUsRequest) (*Allocator, error) {
	a := &Allocator{p: p, pod: req.GetPod(), numa: map[int]int{}}
	if p.Name == PolicyNone {
		return a, nil
	}
	a.t = newTopology(req.GetCpus())
	for _, c := range req.GetCpus() {
		a.numa[int(c.GetId())] = int(c.GetNumaNode())
	}
	reserved, err := p.reservedCPUs(a.t)
	if err != nil {
		return nil, err
	}
	var taken cpuSet
	for _, as := range req.GetAssigned() {
		set, err := parseCPUs(as.GetCpusetCpus())
		if err != nil {
			return nil, fmt.Errorf("assigned CPUs of %s/%s: %w", as.GetPodUid(), as.GetContainerName(), err)
		}
		taken = taken.union(set)
	}
	a.reserved, a.free = reserved, a.t.all.difference(reserved).difference(taken)
	return a, nil
}

// Reserved is what no container gets for itself, and what leaves the
// shared pool too (strict-cpu-reservation), in list form.
func (a *Allocator) Reserved() (reserved, strict string) {
	if a.p.StrictReservation {
		return a.reserved.String(), a.reserved.String()
	}
	return a.reserved.String(), ""
}

// wants is how many CPUs c gets for itself: its integer CPU request if
// it is one of the exclusive containers, else 0.
func (a *Allocator) wants(c *typesv1.Container) int {
	if a.p.Name == PolicyNone || !slices.Contains(exclusiveContainers(a.pod), c) {
		return 0
	}
	return int(requestsOf(c).GetCpuMillis() / 1000)
}

// hints are the NUMA placements of n of the free CPUs (upstream
// generateCPUTopologyHints).
func (a *Allocator) hints(n int) topo.Hints {
	nodeSet := map[int]bool{}
	var nodes []int
	var all, free [][]int
	for _, id := range a.t.all {
		if !nodeSet[a.numa[id]] {
			nodeSet[a.numa[id]] = true
			nodes = append(nodes, a.numa[id])
		}
		all = append(all, []int{a.numa[id]})
	}
	for _, id := range a.free {
		free = append(free, []int{a.numa[id]})
	}
	slices.Sort(nodes)
	return topo.Hints{"cpu": topo.GenerateHints(nodes, all, free, nil, n)}
}

// ContainerHints are the CPU hints of one container (upstream
// GetTopologyHints); nil when it gets no CPUs for itself.
func (a *Allocator) ContainerHints(c *typesv1.Container) topo.Hints {
	n := a.wants(c)
	if n == 0 {
		return nil
	}
	return a.hints(n)
}

// PodHints are the CPU hints of the whole pod (upstream
// GetPodTopologyHints): the most CPUs it holds at once, its init
// containers running one after another.
func (a *Allocator) PodHints() topo.Hints {
	byInit, byRestartable, byApp := 0, 0, 0
	for _, c := range a.pod.GetInitContainers() {
		n := a.wants(c)
		if c.GetRestartable() {
			byRestartable += n
		} else {
			byInit = max(byInit, byRestartable+n)
		}
	}
	for _, c := range a.pod.GetContainers() {
		byApp += a.wants(c)
	}
	n := max(byInit, byApp+byRestartable)
	if n == 0 {
		return nil
	}
	return a.hints(n)
}

// Allocate gives c its CPUs, those on the hint's NUMA nodes first (upstream
// allocateCPUs with its NUMA affinity).
func (a *Allocator) Allocate(c *typesv1.Container, hint topo.Hint) error {
	n := a.wants(c)
	if n == 0 {
		return nil
	}
	reject := func(reason, format string, args ...any) error {
		return &topo.AdmitError{Reason: reason, Message: fmt.Sprintf(format, args...)}
	}
	free := a.free
	if hint.Affinity != 0 {
		var aligned cpuSet
		for _, id := range a.free {
			if hint.Affinity.Has(a.numa[id]) {
				aligned = append(aligned, id)
			}
		}
		if len(aligned) >= n {
			free = aligned
		}
	}
	var set cpuSet
	var ok bool
	t := a.t
	if a.p.FullPCPUsOnly {
		per := t.threadsPerCore()
		if n%per != 0 {
			return reject(ReasonSMTAlignmentError, "SMT Alignment Error: requested %d cpus not multiple cpus per core = %d", n, per)
		}
		if set, ok = takeWholeCores(t, free, n); !ok {
			return reject(ReasonSMTAlignmentError, "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = %d, requested CPUs = %d, CPUs per core = %d", len(wholeCores(t, free))*per, n, per)
		}
	} else if set, ok = take(t, free, n); !ok {
		return reject(ReasonUnexpectedAdmissionError, "Allocate failed due to not enough cpus available to satisfy request: requested=%d, available=%d, which is unexpected", n, len(a.free))
	}
	a.free = a.free.difference(set)
	a.Assignments = append(a.Assignments, &cgroupv1.CPUAssignment{PodUid: a.pod.GetUid(), ContainerName: c.GetName(), CpusetCpus: set.String()})
	return nil
}

// exclusiveContainers are the containers of a Guaranteed pod with an
// integer CPU request: its containers and sidecars (upstream
// guaranteedCPUs). Regular init containers run in the shared pool.
func exclusiveContainers(pod *typesv1.Pod) []*typesv1.Container {
	if nodefacts.PodQOS(pod) != nodefacts.Guaranteed {
		return nil
	}
	var out []*typesv1.Container
	for _, c := range slices.Concat(pod.GetInitContainers(), pod.GetContainers()) {
		if slices.Contains(pod.GetInitContainers(), c) && !c.GetRestartable() {
			continue
		}
		m := requestsOf(c).GetCpuMillis()
		if m > 0 && m%1000 == 0 && m == c.GetResources().GetLimits().GetCpuMillis() {
			out = append(out, c)
		}
	}
	return out
}

// requestsOf is a container's requests, defaulted from its limits by then
// (podspec, the API server).
func requestsOf(c *typesv1.Container) *typesv1.ResourceList { return c.GetResources().GetRequests() }

// wholeCores are the cores whose CPUs are all free.
func wholeCores(t topology, free cpuSet) []cpuSet {
	var out []cpuSet
	for _, core := range t.cores {
		if len(core.difference(free)) == 0 {
			out = append(out, core)
		}
	}
	return out
}

func takeWholeCores(t topology, free cpuSet, n int) (cpuSet, bool) {
	var set cpuSet
	for _, core := range wholeCores(t, free) {
		if len(set) >= n {
			break
		}
		set = set.union(core)
	}
	return set, len(set) == n
}

// take picks n free CPUs as upstream's takeByTopology packs them: whole
// free cores first, then single CPUs from the cores with the fewest free
// CPUs, so that partly used cores fill up before whole ones are split.
func take(t topology, free cpuSet, n int) (cpuSet, bool) {
	if n > len(free) {
		return nil, false
	}
	per := t.threadsPerCore()
	set, _ := takeWholeCores(t, free, n/per*per)
	rest := free.difference(set)
	// How many CPUs of id's core are still to be had.
	freeOn := func(id int) int { return len(t.cores[t.coreOf[id]]) - len(t.cores[t.coreOf[id]].difference(rest)) }
	sort.SliceStable(rest, func(i, j int) bool { return freeOn(rest[i]) < freeOn(rest[j]) })
	for _, id := range rest {
		if len(set) == n {
			break
		}
		set = set.union(cpuSet{id})
	}
	return set, len(set) == n
}

// Describe is the policy for the plugin's log line.
func (p *Policy) Describe() string {
	var opts []string
	if p.FullPCPUsOnly {
		opts = append(opts, OptionFullPCPUsOnly)
	}
	if p.StrictReservation {
		opts = append(opts, OptionStrictCPUReservation)
	}
	return strings.TrimSpace(p.Name + " " + strings.Join(opts, ","))
}
