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

// Allocate answers AllocateCPUs.
func (p *Policy) Allocate(req *cgroupv1.AllocateCPUsRequest) (*cgroupv1.AllocateCPUsResponse, error) {
	resp := &cgroupv1.AllocateCPUsResponse{PolicyName: p.Name, Admit: true}
	if p.Name == PolicyNone {
		return resp, nil
	}
	t := newTopology(req.GetCpus())
	reserved, err := p.reservedCPUs(t)
	if err != nil {
		return nil, err
	}
	resp.ReservedCpus = reserved.String()
	if p.StrictReservation {
		resp.StrictReservedCpus = resp.ReservedCpus
	}
	var taken cpuSet
	for _, a := range req.GetAssigned() {
		set, err := parseCPUs(a.GetCpusetCpus())
		if err != nil {
			return nil, fmt.Errorf("assigned CPUs of %s/%s: %w", a.GetPodUid(), a.GetContainerName(), err)
		}
		taken = taken.union(set)
	}
	free := t.all.difference(reserved).difference(taken)
	pod := req.GetPod()
	for _, c := range exclusiveContainers(pod) {
		n := int(requestsOf(c).GetCpuMillis() / 1000)
		reject := func(reason, format string, args ...any) (*cgroupv1.AllocateCPUsResponse, error) {
			return &cgroupv1.AllocateCPUsResponse{PolicyName: p.Name, Reason: reason, Message: fmt.Sprintf(format, args...)}, nil
		}
		var set cpuSet
		var ok bool
		if p.FullPCPUsOnly {
			per := t.threadsPerCore()
			if n%per != 0 {
				return reject(ReasonSMTAlignmentError, "SMT Alignment Error: requested %d cpus not multiple cpus per core = %d", n, per)
			}
			if set, ok = takeWholeCores(t, free, n); !ok {
				return reject(ReasonSMTAlignmentError, "SMT Alignment Error: not enough free physical CPUs: available physical CPUs = %d, requested CPUs = %d, CPUs per core = %d", len(wholeCores(t, free))*per, n, per)
			}
		} else if set, ok = take(t, free, n); !ok {
			return reject(ReasonUnexpectedAdmissionError, "Allocate failed due to not enough cpus available to satisfy request: requested=%d, available=%d, which is unexpected", n, len(free))
		}
		free = free.difference(set)
		resp.Assignments = append(resp.Assignments, &cgroupv1.CPUAssignment{PodUid: pod.GetUid(), ContainerName: c.GetName(), CpusetCpus: set.String()})
	}
	return resp, nil
}

// exclusiveContainers are the containers of a Guaranteed pod with an
// integer CPU request: its containers and sidecars (upstream
// guaranteedCPUs). Regular init containers run in the shared pool.
func exclusiveContainers(pod *typesv1.Pod) []*typesv1.Container {
	if podQOS(pod) != nodefacts.Guaranteed {
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

// podQOS is the pod's class: the one it has, else upstream's formula.
func podQOS(pod *typesv1.Pod) nodefacts.QOSClass {
	if q := pod.GetQosClass(); q != "" {
		return nodefacts.QOSClass(q)
	}
	amounts := func(l *typesv1.ResourceList) nodefacts.CPUMemory {
		return nodefacts.CPUMemory{CPUMillis: l.GetCpuMillis(), MemoryBytes: l.GetMemoryBytes()}
	}
	var podLevel *nodefacts.Requirements
	if pr := pod.GetPodResources(); pr != nil {
		podLevel = &nodefacts.Requirements{Requests: amounts(pr.GetRequests()), Limits: amounts(pr.GetLimits())}
	}
	var containers []nodefacts.Requirements
	for _, c := range slices.Concat(pod.GetInitContainers(), pod.GetContainers()) {
		containers = append(containers, nodefacts.Requirements{Requests: amounts(requestsOf(c)), Limits: amounts(c.GetResources().GetLimits())})
	}
	return nodefacts.ComputeQOS(podLevel, containers)
}
