package planner

import (
	"context"
	"sync/atomic"

	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
	"github.com/microlet/microlet/sdk"
)

// Plugin serves the planner through the SDK. It implements
// sdk.Plugin[Config], sdk.CgroupPlanner and sdk.CgroupAdmitter.
type Plugin struct {
	cfg      atomic.Pointer[Config]
	managers atomic.Pointer[Managers]
}

// Configure keeps the decoded and validated config.
func (p *Plugin) Configure(_ context.Context, cfg *Config, _ *sdk.Host) error {
	managers, err := cfg.Managers()
	if err != nil {
		return sdk.Invalid("%v", err)
	}
	p.managers.Store(managers)
	p.cfg.Store(cfg)
	sdk.Log().Info("cgroup planner configured", "cgroups_per_qos", cfg.CgroupsPerQOS,
		"enforce_node_allocatable", cfg.EnforceNodeAllocatable, "cpu_cfs_quota", cfg.CPUCFSQuota,
		"cpu_cfs_quota_period", cfg.CPUCFSQuotaPeriod.String(), "pod_pids_limit", cfg.PodPidsLimit,
		"cpu_manager_policy", managers.CPU.Describe(), "memory_manager_policy", managers.Memory.Describe(),
		"topology_manager_policy", managers.Topology.Name, "topology_manager_scope", managers.Topology.Scope)
	return nil
}

// PlanPod plans one pod.
func (p *Plugin) PlanPod(_ context.Context, req *cgroupv1.PlanPodRequest) (*cgroupv1.PlanPodResponse, error) {
	cfg, err := p.config()
	if err != nil {
		return nil, err
	}
	return PlanPod(cfg, req)
}

// PlanNode plans node allocatable and the QoS cgroups.
func (p *Plugin) PlanNode(_ context.Context, req *cgroupv1.PlanNodeRequest) (*cgroupv1.PlanNodeResponse, error) {
	cfg, err := p.config()
	if err != nil {
		return nil, err
	}
	return PlanNode(cfg, req)
}

// Admit decides whether a pod fits the node.
func (p *Plugin) Admit(_ context.Context, req *cgroupv1.AdmitRequest) (*cgroupv1.AdmitResponse, error) {
	if _, err := p.config(); err != nil {
		return nil, err
	}
	return Admit(req)
}

func (p *Plugin) config() (*Config, error) {
	cfg := p.cfg.Load()
	if cfg == nil {
		return nil, sdk.Retryable("the cgroup plugin is not configured yet")
	}
	return cfg, nil
}

// AllocateCPUs is the resource managers' decision for a new pod.
func (p *Plugin) AllocateCPUs(_ context.Context, req *cgroupv1.AllocateCPUsRequest) (*cgroupv1.AllocateCPUsResponse, error) {
	if _, err := p.config(); err != nil {
		return nil, err
	}
	return p.managers.Load().Allocate(req)
}
