package planner

import (
	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk"
)

// The cgroup layout, relative to the cgroup root: upstream's node
// allocatable cgroup and its QoS tiers. Guaranteed pods sit in kubepods.
const (
	kubepodsCgroup   = "/kubepods"
	burstableCgroup  = "/kubepods/burstable"
	bestEffortCgroup = "/kubepods/besteffort"
	podCgroupPrefix  = "pod"
)

// PlanPod decides a pod's QoS class, its cgroup and its settings, and the
// resources of each container, as the kubelet does (pod cgroup:
// pkg/kubelet/cm pod_container_manager_linux.go and ResourceConfigForPod;
// containers: pkg/kubelet/kuberuntime generateLinuxContainerResources).
func PlanPod(cfg *Config, req *cgroupv1.PlanPodRequest) (*cgroupv1.PlanPodResponse, error) {
	pod := req.GetPod()
	if pod.GetUid() == "" {
		return nil, sdk.Invalid("the request has no pod, or a pod without a uid")
	}
	qos := PodQOS(pod)
	capacity := amountsOf(req.GetNode().GetCapacity())
	memoryCapacity := capacity[resourceMemory]
	if qos == Burstable && memoryCapacity <= 0 {
		return nil, sdk.Invalid("the request's node has no memory capacity; it is needed for the oom_score_adj of Burstable pod %s/%s", pod.GetNamespace(), pod.GetName())
	}
	sizes := pageSizes(capacity)
	resp := &cgroupv1.PlanPodResponse{QosClass: qos}
	if cfg.CgroupsPerQOS {
		resp.CgroupParent = podCgroup(qos, pod.GetUid())
		resp.PodResources = podCgroupSettings(cfg, pod, qos, sizes)
	}
	plan := func(c *typesv1.Container) *cgroupv1.ContainerPlan {
		return &cgroupv1.ContainerPlan{
			Name:        c.GetName(),
			Resources:   containerSettings(cfg, pod, c, sizes),
			OomScoreAdj: containerOOMScoreAdj(pod, qos, c, memoryCapacity),
		}
	}
	for _, c := range pod.GetContainers() {
		resp.Containers = append(resp.Containers, plan(c))
	}
	for _, c := range pod.GetInitContainers() {
		resp.InitContainers = append(resp.InitContainers, plan(c))
	}
	return resp, nil
}

// podCgroup is the cgroup of a pod of the given QoS class, in cgroupfs form
// relative to the cgroup root.
func podCgroup(qos, uid string) string {
	parent := kubepodsCgroup
	switch qos {
	case Burstable:
		parent = burstableCgroup
	case BestEffort:
		parent = bestEffortCgroup
	}
	return parent + "/" + podCgroupPrefix + uid
}

// podCgroupSettings are the pod cgroup's settings (upstream
// ResourceConfigForPod with podPidsLimit): shares from the pod's cpu
// requests; for Guaranteed pods, and for Burstable pods whose every
// container has a limit (or whose pod-level resources set one), the CFS
// quota and the memory limit; the pod's huge pages.
func podCgroupSettings(cfg *Config, pod *typesv1.Pod, qos string, nodeSizes []int64) *cgroupv1.CgroupSettings {
	requests := podRequests(pod)
	cpuLimited, memoryLimited := true, true
	limits := podLimits(pod, func(a amounts) {
		if a[resourceCPU] == 0 {
			cpuLimited = false
		}
		if a[resourceMemory] == 0 {
			memoryLimited = false
		}
	})
	if podLevelResourcesSet(pod) {
		pl := amountsOf(pod.GetPodResources().GetLimits())
		cpuLimited = cpuLimited || pl[resourceCPU] != 0
		memoryLimited = memoryLimited || pl[resourceMemory] != 0
	}
	shares := MilliCPUToShares(requests[resourceCPU])
	period := cfg.periodMicros()
	quota := MilliCPUToQuota(limits[resourceCPU], period)
	if !cfg.CPUCFSQuota {
		quota = -1
	}
	memory := limits[resourceMemory]

	s := &cgroupv1.CgroupSettings{}
	switch qos {
	case Guaranteed, Burstable:
		s.CpuShares = &shares
		if qos == Guaranteed || cpuLimited {
			s.CpuPeriod = &period
			if quota != 0 {
				s.CpuQuota = &quota
			}
		}
		if qos == Guaranteed || memoryLimited {
			s.MemoryLimitBytes = &memory
		}
	default:
		minShares := uint64(MinShares)
		s.CpuShares = &minShares
	}
	s.HugepageLimits = hugePageLimits(nodeSizes, 0, requests, true)
	if cfg.PodPidsLimit > 0 {
		s.PidsLimit = &cfg.PodPidsLimit
	}
	return s
}

// containerSettings are one container's resources (upstream
// calculateLinuxResources and GetHugepageLimitsFromResources): shares from
// its cpu request, or its limit when it requests none; the CFS quota of its
// limit over the configured period; its memory limit; a hugetlb limit for
// every page size. With pod-level resources, a container without a limit
// gets the pod's.
func containerSettings(cfg *Config, pod *typesv1.Pod, c *typesv1.Container, nodeSizes []int64) *cgroupv1.CgroupSettings {
	requests, limits := amountsOf(requestsOf(c)), amountsOf(limitsOf(c))
	cpuLimit, memoryLimit := limits[resourceCPU], limits[resourceMemory]
	if podLevelResourcesSet(pod) {
		pl := amountsOf(pod.GetPodResources().GetLimits())
		if cpuLimit == 0 {
			cpuLimit = pl[resourceCPU]
		}
		if memoryLimit == 0 {
			memoryLimit = pl[resourceMemory]
		}
	}
	cpuRequest, requested := requests[resourceCPU]
	if !requested {
		// The API server defaults requests to limits; repeated here for
		// pods that bypassed it, as upstream does.
		cpuRequest = cpuLimit
	}
	shares := MilliCPUToShares(cpuRequest)
	s := &cgroupv1.CgroupSettings{CpuShares: &shares}
	if memoryLimit != 0 {
		s.MemoryLimitBytes = &memoryLimit
	}
	if cfg.CPUCFSQuota {
		period := cfg.periodMicros()
		s.CpuPeriod = &period
		if quota := MilliCPUToQuota(cpuLimit, period); quota != 0 {
			s.CpuQuota = &quota
		}
	}
	s.HugepageLimits = hugePageLimits(nodeSizes, 0, limits, false)
	return s
}
