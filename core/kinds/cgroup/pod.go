package cgroup

import (
	"context"
	"errors"
	"fmt"
	"path"
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/core/pluginhost"
	"github.com/microlet/microlet/core/pods/podruntime"
	"github.com/microlet/microlet/core/pods/podview"
	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// podPlan is a pod's plan as the manager applies it.
type podPlan struct {
	qos string
	// cgroup is the pod cgroup relative to the cgroup root; "" for none.
	cgroup   string
	settings *cgroupv1.CgroupSettings
	// resources is what the runtime manager gets, the cgroup root included.
	resources *podruntime.ResourcePlan
}

var _ podruntime.ResourcePlanner = (*Manager)(nil)

// PlanPod decides where a pod's cgroup goes and what its containers get,
// and creates the pod cgroup with the pod's settings if it does not exist
// yet, before the runtime starts the sandbox. A pod keeps its last good
// plan while the plugin is down or answers with an error; a pod without
// one waits: the error wraps pluginhost.ErrUnavailable. Without a cgroup
// plugin, pods get no cgroup parent and no resource settings.
func (m *Manager) PlanPod(ctx context.Context, pod *v1.Pod) (*podruntime.ResourcePlan, error) {
	last := m.lastPlan(pod.UID)
	resp, err := pluginhost.Ask(ctx, m.opts.Plugin, "cgroup plugin PlanPod", func(ctx context.Context, p pluginhost.Conn[cgroupv1.CgroupServiceClient]) (*cgroupv1.PlanPodResponse, error) {
		return p.Client.PlanPod(ctx, &cgroupv1.PlanPodRequest{Pod: podView(pod), Node: m.nodeView()})
	})
	var plan *podPlan
	if err == nil {
		m.pluginAnswered()
		plan, err = m.podPlan(pod, resp)
	}
	if err == nil && last != nil && plan.cgroup != last.cgroup {
		// A pod's cgroup never moves (upstream: its QoS class never
		// changes); a plugin swapped for one with another layout plans
		// the containers only.
		plan.qos, plan.cgroup, plan.settings = last.qos, last.cgroup, last.settings
		plan.resources.CgroupParent, plan.resources.Sandbox = last.resources.CgroupParent, last.resources.Sandbox
	}
	switch {
	case notConfigured(err):
		m.noPlugin()
		if last == nil {
			return &podruntime.ResourcePlan{}, nil
		}
		plan = last
	case err != nil && ctx.Err() != nil:
		return nil, ctx.Err()
	case err != nil && last != nil:
		m.log.Debug("keeping the last good cgroup plan", "pod", podName(pod), "error", err)
		plan = last
	case errors.Is(err, pluginhost.ErrUnavailable):
		return nil, fmt.Errorf("pod %s waits for the cgroup plugin: %w", podName(pod), err)
	case err != nil:
		return nil, fmt.Errorf("pod %s has no cgroup plan: %w", podName(pod), err)
	}
	if err := m.ensurePodCgroup(plan); err != nil {
		return nil, fmt.Errorf("pod %s: %w", podName(pod), err)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	m.plans[pod.UID] = plan
	delete(m.stuck, pod.UID)
	if m.cpu == nil {
		return plan.resources, nil
	}
	out := *plan.resources
	out.Containers = m.cpu.withCPUSets(pod.UID, plan.resources.Containers)
	return &out, nil
}

// ensurePodCgroup creates the pod cgroup with its settings when it is
// missing. An existing one is left as it is, as upstream: the plan of a
// running pod does not change under it.
func (m *Manager) ensurePodCgroup(plan *podPlan) error {
	if plan.cgroup == "" {
		return nil
	}
	abs := m.absolute(plan.cgroup)
	if m.tree.exists(abs) {
		return nil
	}
	if err := m.tree.apply(abs, plan.settings); err != nil {
		return fmt.Errorf("create the pod cgroup: %w", err)
	}
	return nil
}

// podPlan checks the plugin's answer and turns it into what the runtime
// manager takes.
func (m *Manager) podPlan(pod *v1.Pod, resp *cgroupv1.PlanPodResponse) (*podPlan, error) {
	bad := func(format string, args ...any) (*podPlan, error) {
		return nil, fmt.Errorf("the cgroup plugin's plan for pod %s is invalid: %s", podName(pod), fmt.Sprintf(format, args...))
	}
	switch resp.GetQosClass() {
	case string(v1.PodQOSGuaranteed), string(v1.PodQOSBurstable), string(v1.PodQOSBestEffort):
	default:
		return bad("qos_class %q, expected Guaranteed, Burstable or BestEffort", resp.GetQosClass())
	}
	plan := &podPlan{qos: resp.GetQosClass(), resources: &podruntime.ResourcePlan{Containers: map[string]*runtimeapi.LinuxContainerResources{}}}
	if parent := resp.GetCgroupParent(); parent != "" {
		if err := checkCgroupPath(parent); err != nil {
			return bad("cgroup_parent: %v", err)
		}
		if err := checkSettings(resp.GetPodResources()); err != nil {
			return bad("pod_resources: %v", err)
		}
		plan.cgroup, plan.settings = parent, resp.GetPodResources()
		plan.resources.CgroupParent = m.absolute(parent)
		plan.resources.Sandbox = m.linuxResources(plan.settings)
	}
	names := containerNames(pod)
	for _, c := range slices.Concat(resp.GetContainers(), resp.GetInitContainers()) {
		if !slices.Contains(names, c.GetName()) {
			return bad("it plans container %q, which the pod does not have", c.GetName())
		}
		if err := checkSettings(c.GetResources()); err != nil {
			return bad("container %q: %v", c.GetName(), err)
		}
		plan.resources.Containers[c.GetName()] = m.containerResources(c)
	}
	return plan, nil
}

// containerResources are a container's plan as CRI takes it, with the
// kubelet's NoSwap settings.
func (m *Manager) containerResources(c *cgroupv1.ContainerPlan) *runtimeapi.LinuxContainerResources {
	r := m.linuxResources(c.GetResources())
	r.OomScoreAdj = c.GetOomScoreAdj()
	for _, l := range hugePageLimitsByUnit(c.GetResources().GetHugepageLimits()) {
		r.HugepageLimits = append(r.HugepageLimits, &runtimeapi.HugepageLimit{PageSize: l.unit, Limit: l.bytes})
	}
	if m.opts.Cgroups.SwapAccounting {
		// NoSwap (memorySwap.swapBehavior's default): v1 caps memory+swap
		// at the memory limit, v2 allows no swap.
		if m.opts.Cgroups.Version() == 2 {
			if r.Unified == nil {
				r.Unified = map[string]string{}
			}
			r.Unified["memory.swap.max"] = "0"
		} else {
			r.MemorySwapLimitInBytes = r.MemoryLimitInBytes
		}
	}
	return r
}

// linuxResources are the cpu and memory settings as CRI takes them (unset
// is 0, CRI's "not specified"), with the kubelet's cgroup v2
// memory.oom.group. The sandbox gets the pod cgroup's, as upstream's
// applySandboxResources hands it the pod's.
func (m *Manager) linuxResources(s *cgroupv1.CgroupSettings) *runtimeapi.LinuxContainerResources {
	r := &runtimeapi.LinuxContainerResources{
		CpuShares:  int64(s.GetCpuShares()),
		CpuQuota:   s.GetCpuQuota(),
		CpuPeriod:  int64(s.GetCpuPeriod()),
		CpusetCpus: s.GetCpusetCpus(),
		CpusetMems: s.GetCpusetMems(),
	}
	if limit := s.GetMemoryLimitBytes(); limit > 0 {
		r.MemoryLimitInBytes = limit
	}
	if m.opts.Cgroups.Version() == 2 && !m.opts.SingleProcessOOMKill {
		// Kill the whole container on OOM, as the kubelet asks by default.
		r.Unified = map[string]string{"memory.oom.group": "1"}
	}
	return r
}

// RemovePod removes the cgroup of a terminated pod and forgets its plan.
// Nothing is killed: its containers are gone by then. A cgroup that still
// holds processes is logged and removed by a later attempt (every
// ReapplyInterval), and the error says so. A pod whose plan is unknown (the
// core restarted) is looked for in the kubelet's layout.
func (m *Manager) RemovePod(uid types.UID) error {
	if err := m.releaseCPUs(uid); err != nil {
		return fmt.Errorf("release the CPUs of pod %s: %w", uid, err)
	}
	m.mu.Lock()
	plan := m.plans[uid]
	delete(m.plans, uid)
	m.mu.Unlock()
	// The kubelet's layout, which the default plugin follows.
	candidates := []string{"/kubepods/pod" + string(uid), "/kubepods/burstable/pod" + string(uid), "/kubepods/besteffort/pod" + string(uid)}
	if plan != nil {
		candidates = []string{plan.cgroup}
	}
	var errs []error
	for _, cgroup := range candidates {
		if cgroup == "" {
			continue
		}
		if err := m.removePodCgroup(uid, cgroup); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// removePodCgroup removes one pod cgroup, or keeps it for a later attempt.
func (m *Manager) removePodCgroup(uid types.UID, cgroup string) error {
	err := m.tree.remove(m.absolute(cgroup))
	m.mu.Lock()
	defer m.mu.Unlock()
	if err == nil {
		delete(m.stuck, uid)
		return nil
	}
	m.stuck[uid] = cgroup
	if errors.Is(err, errBusy) {
		m.log.Warn("pod cgroup still holds processes; removing it later", "pod_uid", uid, "error", err)
	}
	return fmt.Errorf("remove the cgroup of pod %s (retried every %s): %w", uid, m.opts.ReapplyInterval, err)
}

// removeStuck tries again to remove pod cgroups that held processes.
func (m *Manager) removeStuck() {
	m.mu.Lock()
	stuck := make(map[types.UID]string, len(m.stuck))
	for uid, cgroup := range m.stuck {
		stuck[uid] = cgroup
	}
	m.mu.Unlock()
	for uid, cgroup := range stuck {
		if err := m.removePodCgroup(uid, cgroup); err == nil {
			m.log.Info("removed pod cgroup", "pod_uid", uid, "cgroup", m.absolute(cgroup))
		}
	}
}

// PodCgroup is the absolute cgroup path of a planned pod ("/kubepods/
// burstable/pod<uid>" under the cgroup root), and its QoS class; false
// when the pod has no plan or no cgroup of its own.
func (m *Manager) PodCgroup(uid types.UID) (cgroup, qos string, ok bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	plan := m.plans[uid]
	if plan == nil || plan.cgroup == "" {
		return "", "", false
	}
	return m.absolute(plan.cgroup), plan.qos, true
}

func (m *Manager) lastPlan(uid types.UID) *podPlan {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.plans[uid]
}

// checkCgroupPath accepts clean absolute cgroup paths below the root.
func checkCgroupPath(p string) error {
	if p == "/" || path.Clean(p) != p || !path.IsAbs(p) {
		return fmt.Errorf("%q, expected a clean absolute path below the cgroup root such as \"/kubepods/pod<uid>\"", p)
	}
	return nil
}

// podView is the pod as the plugin sees it; the pod's status carries the
// QoS class it already has, which never changes.
func podView(pod *v1.Pod) *typesv1.Pod {
	return podview.Pod(pod, &pod.Status, nil, podview.Extra{}, nil)
}

func containerNames(pod *v1.Pod) []string {
	var names []string
	for _, c := range slices.Concat(pod.Spec.InitContainers, pod.Spec.Containers) {
		names = append(names, c.Name)
	}
	return names
}

func podName(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }
