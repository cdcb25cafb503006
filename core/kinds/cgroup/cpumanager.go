package cgroup

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubelettypes "k8s.io/kubelet/pkg/types"
	"k8s.io/utils/cpuset"

	"github.com/microlet/microlet/core/node/machine"
	"github.com/microlet/microlet/core/pluginhost"
	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
)

// DefaultCPUReconcilePeriod is the kubelet's cpuManagerReconcilePeriod.
const DefaultCPUReconcilePeriod = 10 * time.Second

// policyStatic is the CPU manager policy that hands out CPUs; under any
// other ("none", or none yet) containers get no cpuset.
const policyStatic = "static"

// CPURuntime is what the CPU manager's reconcile loop needs of CRI.
type CPURuntime interface {
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	UpdateContainerResources(ctx context.Context, containerID string, resources *runtimeapi.ContainerResources) error
}

// cpuManager is the core's side of the kubelet's CPU manager: the state
// (which container has which CPUs for itself, kept in cpu_manager_state
// across restarts), the checks of the plugin's answers, and the cpusets
// written at create time and by the reconcile loop.
type cpuManager struct {
	path   string
	online cpuset.CPUSet
	infos  []*cgroupv1.CPUInfo
	// state is guarded by Manager.mu.
	state *cpuState
	// written is the cpuset last written to each running container.
	written map[string]string
	kick    chan struct{}
	// reserved is what the plugin last said no container may have for
	// itself; known once it answered (guarded by Manager.mu).
	reserved cpuset.CPUSet
	known    bool
	// restored are the pods whose CPUs or memory came from the state files
	// and that admission has not seen since; the others hold them only
	// while admitted.
	restored map[string]bool
	// memory is the memory manager's state, kept in memPath (guarded by
	// Manager.mu); numa are the node's NUMA nodes.
	memory  *memoryState
	memPath string
	numa    []*cgroupv1.NUMANode
	// affinity are the topology manager's device affinities of the
	// admitted pods, by pod and container (guarded by Manager.mu).
	affinity map[string]map[string][]int64
}

func newCPUManager(rootDir, sysfs string, capacity *machine.Capacity) (*cpuManager, error) {
	online, infos, err := readCPUs(sysfs)
	if err != nil {
		return nil, fmt.Errorf("cpumanager: %w", err)
	}
	numa, err := readNUMA(sysfs, capacity)
	if err != nil {
		return nil, fmt.Errorf("memorymanager: %w", err)
	}
	memPath := filepath.Join(rootDir, memoryStateFile)
	memory, err := loadMemoryState(memPath)
	if err != nil {
		return nil, fmt.Errorf("memorymanager: %w", err)
	}
	if err := memory.checkNodes(numa); err != nil {
		return nil, fmt.Errorf("memorymanager: %s: %w; drain the node and remove it", memPath, err)
	}
	path := fmt.Sprintf("%s/%s", rootDir, cpuStateFile)
	state, err := loadCPUState(path)
	if err != nil {
		return nil, fmt.Errorf("cpumanager: %w", err)
	}
	if missing := state.exclusive().Difference(online); missing.Size() > 0 {
		return nil, fmt.Errorf("cpumanager: the state %s assigns CPUs %s, which are not online; drain the node and remove it", path, missing)
	}
	c := &cpuManager{path: path, online: online, infos: infos, state: state, written: map[string]string{}, kick: make(chan struct{}, 1),
		memory: memory, memPath: memPath, numa: numa, affinity: map[string]map[string][]int64{}}
	c.restored = c.holders()
	return c, nil
}

// holders are the pods holding CPUs or memory. Called with Manager.mu
// held, or before the manager is shared.
func (c *cpuManager) holders() map[string]bool {
	out := map[string]bool{}
	for uid := range c.state.assigned {
		out[uid] = true
	}
	for uid := range c.memory.assigned {
		out[uid] = true
	}
	return out
}

// allocateCPUs asks the plugin which of a newly admitted pod's containers
// get CPUs for themselves, checks and keeps the answer. A pod that already
// has its CPUs (admitted again after a restart) keeps them. CPUs of pods
// no longer admitted (rejected by a later admitter, say) are released
// first. An answer that fails the checks is treated as the plugin being
// down: the pod waits.
func (m *Manager) allocateCPUs(ctx context.Context, pod *v1.Pod, admitted []*v1.Pod) (Decision, error) {
	c := m.cpu
	for _, uid := range m.notAdmitted(pod, admitted) {
		if err := m.releaseCPUs(uid); err != nil {
			return Decision{Reason: ReasonUnexpectedAdmissionError, Message: err.Error()}, nil
		}
	}
	m.mu.Lock()
	c.forgetAffinities(pod, admitted)
	has := c.holders()[string(pod.UID)]
	delete(c.restored, string(pod.UID))
	var assigned []*cgroupv1.CPUAssignment
	for uid, containers := range c.state.assigned {
		for name, set := range containers {
			assigned = append(assigned, &cgroupv1.CPUAssignment{PodUid: uid, ContainerName: name, CpusetCpus: set.String()})
		}
	}
	memAssigned := memoryAssignments(c.memory.assigned)
	m.mu.Unlock()
	if has {
		return Decision{Admit: true}, nil
	}
	resp, err := m.askCPUs(ctx, pod, assigned, memAssigned)
	switch {
	case notConfigured(err), status.Code(err) == codes.Unimplemented:
		return Decision{Admit: true}, nil
	case err != nil && ctx.Err() != nil:
		return Decision{}, ctx.Err()
	case errors.Is(err, pluginhost.ErrUnavailable):
		return Decision{}, fmt.Errorf("pod %s waits for the cgroup plugin's CPU allocation: %w", podName(pod), err)
	case err != nil:
		return Decision{Reason: ReasonUnexpectedAdmissionError, Message: fmt.Sprintf("Allocate failed due to %v, which is unexpected", err)}, nil
	}
	if !resp.GetAdmit() {
		d := Decision{Reason: resp.GetReason(), Message: resp.GetMessage()}
		if d.Reason == "" {
			d.Reason = ReasonUnknown
		}
		return d, nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	next, reserved, err := c.checkAllocation(pod, resp)
	var nextMem *memoryState
	var affinities map[string][]int64
	if err == nil {
		nextMem, err = c.checkMemory(pod, resp)
	}
	if err == nil {
		affinities, err = c.checkAffinities(pod, resp)
	}
	if err != nil {
		m.log.Warn("refusing the cgroup plugin's CPU and memory allocation", "pod", podName(pod), "error", err)
		return Decision{}, fmt.Errorf("the cgroup plugin's CPU and memory allocation for pod %s is invalid (%v): %w", podName(pod), err, pluginhost.ErrUnavailable)
	}
	if err := c.commitBoth(next, nextMem); err != nil {
		return Decision{Reason: ReasonUnexpectedAdmissionError, Message: err.Error()}, nil
	}
	c.reserved, c.known = reserved, true
	c.keepAffinities(pod.UID, affinities)
	return Decision{Admit: true}, nil
}

// commitBoth saves the memory state, then the CPU state, the memory state
// put back if the CPU state cannot be saved. Called with Manager.mu held.
func (c *cpuManager) commitBoth(next *cpuState, nextMem *memoryState) error {
	prev := c.memory
	if err := c.commitMemory(nextMem); err != nil {
		return err
	}
	if err := c.commit(next); err != nil {
		if undo := c.commitMemory(prev); undo != nil {
			return errors.Join(err, undo)
		}
		return err
	}
	return nil
}

// notAdmitted are the pods holding CPUs that are neither pod nor admitted
// nor restored from the state file and not yet admitted again.
func (m *Manager) notAdmitted(pod *v1.Pod, admitted []*v1.Pod) []types.UID {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []types.UID
	for uid := range m.cpu.holders() {
		if uid != string(pod.UID) && !m.cpu.restored[uid] && !slices.ContainsFunc(admitted, func(p *v1.Pod) bool { return string(p.UID) == uid }) {
			out = append(out, types.UID(uid))
		}
	}
	return out
}

func (m *Manager) askCPUs(ctx context.Context, pod *v1.Pod, assigned []*cgroupv1.CPUAssignment, memAssigned []*cgroupv1.MemoryAssignment) (*cgroupv1.AllocateCPUsResponse, error) {
	req := &cgroupv1.AllocateCPUsRequest{Pod: podView(pod), Node: m.nodeView(), Cpus: m.cpu.infos, Assigned: assigned,
		NumaNodes: m.cpu.numa, MemoryAssigned: memAssigned, Devices: m.podDevices(pod)}
	return pluginhost.Ask(ctx, m.opts.Plugin, "cgroup plugin AllocateCPUs", func(ctx context.Context, p pluginhost.Conn[cgroupv1.CgroupServiceClient]) (*cgroupv1.AllocateCPUsResponse, error) {
		return p.Client.AllocateCPUs(ctx, req)
	})
}

// commit saves a new state and has the reconcile loop apply it. Called
// with Manager.mu held.
func (c *cpuManager) commit(next *cpuState) error {
	if next.policy == c.state.policy && next.shared.Equals(c.state.shared) && maps.EqualFunc(next.assigned, c.state.assigned, func(a, b map[string]cpuset.CPUSet) bool {
		return maps.EqualFunc(a, b, cpuset.CPUSet.Equals)
	}) {
		if _, err := os.Stat(c.path); err == nil {
			return nil
		}
	}
	if err := next.save(c.path); err != nil {
		return err
	}
	c.state = next
	select {
	case c.kick <- struct{}{}:
	default:
	}
	return nil
}

// learnCPUPolicy asks the plugin for an empty pod's CPUs, to learn its
// policy and reserved CPUs at start (and write the state file, as the
// kubelet does), so that the shared pool is in force before the first
// pod that takes CPUs. Without a plugin or AllocateCPUs: policy none.
func (m *Manager) learnCPUPolicy(ctx context.Context) error {
	c := m.cpu
	m.mu.Lock()
	known := c.known
	m.mu.Unlock()
	if known {
		return nil
	}
	m.mu.Lock()
	memAssigned := memoryAssignments(c.memory.assigned)
	m.mu.Unlock()
	resp, err := m.askCPUs(ctx, &v1.Pod{}, nil, memAssigned)
	switch {
	case notConfigured(err), status.Code(err) == codes.Unimplemented:
		return nil
	case err != nil:
		return err
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	next, reserved, err := c.checkAllocation(&v1.Pod{}, resp)
	if err != nil {
		return fmt.Errorf("the cgroup plugin's CPU policy is invalid: %w", err)
	}
	nextMem, err := c.checkMemory(&v1.Pod{}, resp)
	if err != nil {
		return fmt.Errorf("the cgroup plugin's memory policy is invalid: %w", err)
	}
	m.log.Info("CPU manager", "policy", next.policy, "reserved_cpus", reserved.String(), "shared_pool", next.shared.String(), "state", c.path)
	m.log.Info("memory manager", "policy", nextMem.policy, "numa_nodes", len(c.numa), "state", c.memPath)
	if err := c.commitBoth(next, nextMem); err != nil {
		return err
	}
	c.reserved, c.known = reserved, true
	return nil
}

// checkAllocation is the core's final say over an allocation: only the
// pod's own containers, only online CPUs outside the reserved ones, no CPU
// handed out twice, and a shared pool left for everything else. It
// answers the state the allocation leads to. Called with Manager.mu held.
func (c *cpuManager) checkAllocation(pod *v1.Pod, resp *cgroupv1.AllocateCPUsResponse) (*cpuState, cpuset.CPUSet, error) {
	none := cpuset.New()
	reserved, err := cpuset.Parse(resp.GetReservedCpus())
	if err != nil {
		return nil, none, fmt.Errorf("reserved_cpus: %w", err)
	}
	strict, err := cpuset.Parse(resp.GetStrictReservedCpus())
	if err != nil {
		return nil, none, fmt.Errorf("strict_reserved_cpus: %w", err)
	}
	next := &cpuState{policy: resp.GetPolicyName(), assigned: maps.Clone(c.state.assigned)}
	taken := c.state.exclusive()
	names := containerNames(pod)
	for _, a := range resp.GetAssignments() {
		set, err := cpuset.Parse(a.GetCpusetCpus())
		switch {
		case err != nil:
			return nil, none, fmt.Errorf("container %q: %w", a.GetContainerName(), err)
		case a.GetPodUid() != string(pod.UID) || !slices.Contains(names, a.GetContainerName()):
			return nil, none, fmt.Errorf("it assigns CPUs to %s/%s, not a container of this pod", a.GetPodUid(), a.GetContainerName())
		case next.assigned[a.GetPodUid()][a.GetContainerName()].Size() > 0:
			return nil, none, fmt.Errorf("container %q is assigned CPUs twice", a.GetContainerName())
		case set.IsEmpty() || !set.IsSubsetOf(c.online.Difference(reserved)):
			return nil, none, fmt.Errorf("container %q gets CPUs %q; expected some of the online CPUs %s minus the reserved %s", a.GetContainerName(), set, c.online, reserved)
		case !set.Intersection(taken).IsEmpty():
			return nil, none, fmt.Errorf("container %q gets CPUs %s, already taken", a.GetContainerName(), set.Intersection(taken))
		}
		if next.assigned[a.GetPodUid()] == nil {
			next.assigned[a.GetPodUid()] = map[string]cpuset.CPUSet{}
		}
		next.assigned[a.GetPodUid()][a.GetContainerName()] = set
		taken = taken.Union(set)
	}
	if next.policy != policyStatic && len(resp.GetAssignments()) > 0 {
		return nil, none, fmt.Errorf("policy %q assigns CPUs; only %q does", next.policy, policyStatic)
	}
	if len(c.state.assigned) > 0 && next.policy != c.state.policy {
		// Upstream refuses to start on a state of another policy.
		return nil, none, fmt.Errorf("the CPU manager policy changed from %q to %q while pods hold CPUs; drain the node and remove %s", c.state.policy, next.policy, c.path)
	}
	next.shared = c.online.Difference(taken).Difference(strict)
	if next.policy == policyStatic && next.shared.IsEmpty() {
		return nil, none, errors.New("it leaves no CPU to the shared pool")
	}
	return next, reserved, nil
}

// cpusetFor is the cpuset a container gets: its own CPUs, else the shared
// pool; "" (no cpuset) unless the static policy is in force. Called with
// Manager.mu held.
func (c *cpuManager) cpusetFor(uid types.UID, container string) string {
	if c == nil || c.state.policy != policyStatic {
		return ""
	}
	if set, ok := c.state.assigned[string(uid)][container]; ok {
		return set.String()
	}
	return c.state.shared.String()
}

// withCPUSets are a pod's container resources with their current cpusets.
// Called with Manager.mu held.
func (c *cpuManager) withCPUSets(uid types.UID, in map[string]*runtimeapi.LinuxContainerResources) map[string]*runtimeapi.LinuxContainerResources {
	out := make(map[string]*runtimeapi.LinuxContainerResources, len(in))
	for name, r := range in {
		r = proto.Clone(r).(*runtimeapi.LinuxContainerResources)
		if set := c.cpusetFor(uid, name); set != "" {
			r.CpusetCpus = set
		}
		if mems := c.memsFor(uid, name); mems != "" {
			r.CpusetMems = mems
		}
		out[name] = r
	}
	return out
}

// releaseCPUs returns a terminated pod's CPUs to the shared pool.
func (m *Manager) releaseCPUs(uid types.UID) error {
	c := m.cpu
	if c == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(c.affinity, string(uid))
	if err := c.releaseMemory(uid); err != nil {
		return err
	}
	if _, ok := c.state.assigned[string(uid)]; !ok {
		return nil
	}
	next := &cpuState{policy: c.state.policy, assigned: maps.Clone(c.state.assigned)}
	strict := c.online.Difference(c.state.exclusive()).Difference(c.state.shared)
	delete(next.assigned, string(uid))
	delete(c.restored, string(uid))
	next.shared = c.online.Difference(next.exclusive()).Difference(strict)
	if err := c.commit(next); err != nil {
		return err
	}
	m.log.Info("released the pod's CPUs to the shared pool", "pod_uid", uid, "shared_pool", next.shared.String())
	return nil
}

// reconcileCPUs is upstream's reconcile loop: every running container of a
// pod gets the cpuset it should have (the shared pool shrinks and
// grows as pods take and release CPUs), written again only when it changed
// since last written; after a restart, every one once. Pods restored from
// the state file that are neither active nor have a running container
// left (removed while the core was down) release their CPUs and memory.
func (m *Manager) reconcileCPUs(ctx context.Context) error {
	c := m.cpu
	if err := m.learnCPUPolicy(ctx); err != nil {
		return err
	}
	m.mu.Lock()
	idle := c.state.policy != policyStatic && len(c.memory.assigned) == 0
	m.mu.Unlock()
	if idle {
		// Nothing to write, nothing that could be stale.
		return nil
	}
	containers, err := m.opts.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}})
	if err != nil {
		return fmt.Errorf("list containers: %w", err)
	}
	running := map[string]bool{}
	type update struct{ id, set string }
	var updates []update
	m.mu.Lock()
	live := map[string]bool{}
	for _, ctr := range containers {
		uid, name := ctr.GetLabels()[kubelettypes.KubernetesPodUIDLabel], ctr.GetLabels()[kubelettypes.KubernetesContainerNameLabel]
		if uid == "" {
			continue
		}
		running[ctr.GetId()], live[uid] = true, true
		if set := c.cpusetFor(types.UID(uid), name); set != c.written[ctr.GetId()] {
			updates = append(updates, update{ctr.GetId(), set})
		}
	}
	for id := range c.written {
		if !running[id] {
			delete(c.written, id)
		}
	}
	var stale []types.UID
	if m.podsKnown {
		for uid := range c.holders() {
			if c.restored[uid] && !live[uid] && !slices.ContainsFunc(m.pods, func(p *v1.Pod) bool { return string(p.UID) == uid }) {
				stale = append(stale, types.UID(uid))
			}
		}
	}
	m.mu.Unlock()
	var errs []error
	for _, uid := range stale {
		m.log.Info("releasing the CPUs of a pod that is gone", "pod_uid", uid)
		errs = append(errs, m.releaseCPUs(uid))
	}
	for _, u := range updates {
		// The cpuset only, as upstream: the runtime keeps the rest.
		if err := m.opts.Runtime.UpdateContainerResources(ctx, u.id, &runtimeapi.ContainerResources{Linux: &runtimeapi.LinuxContainerResources{CpusetCpus: u.set}}); err != nil {
			errs = append(errs, fmt.Errorf("update the cpuset of container %s: %w", u.id, err))
			continue
		}
		m.mu.Lock()
		c.written[u.id] = u.set
		m.mu.Unlock()
	}
	return errors.Join(errs...)
}

// runCPUReconcile reconciles every CPUReconcilePeriod and at once when an
// allocation or release changed the shared pool, until ctx ends.
func (m *Manager) runCPUReconcile(ctx context.Context) {
	ticker := time.NewTicker(m.opts.CPUReconcilePeriod)
	defer ticker.Stop()
	for {
		if err := m.reconcileCPUs(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn("cpusets not reconciled; retrying", "error", err, "in", m.opts.CPUReconcilePeriod)
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-m.cpu.kick:
		}
	}
}
