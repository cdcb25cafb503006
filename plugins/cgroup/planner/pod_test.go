package planner

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk"
)

// settings builds CgroupSettings; zero fields stay unset.
type settings struct {
	shares, period uint64
	quota, memory  int64
	pids           int64
	hugepages      map[string]int64
}

func (s settings) proto() *cgroupv1.CgroupSettings {
	out := &cgroupv1.CgroupSettings{HugepageLimits: s.hugepages}
	if s.shares != 0 {
		out.CpuShares = ptr(s.shares)
	}
	if s.period != 0 {
		out.CpuPeriod = ptr(s.period)
	}
	if s.quota != 0 {
		out.CpuQuota = ptr(s.quota)
	}
	if s.memory != 0 {
		out.MemoryLimitBytes = ptr(s.memory)
	}
	if s.pids != 0 {
		out.PidsLimit = ptr(s.pids)
	}
	return out
}

func containerPlan(name string, oom int64, s settings) *cgroupv1.ContainerPlan {
	return &cgroupv1.ContainerPlan{Name: name, OomScoreAdj: oom, Resources: s.proto()}
}

func TestPlanPod(t *testing.T) {
	node := &typesv1.Node{Capacity: rl(t, "cpu", "2", "memory", "4Gi", "hugepages-2Mi", "64Mi", "pods", "110")}
	noHugePages := map[string]int64{"2Mi": 0}
	tests := []struct {
		name string
		cfg  func(*Config)
		pod  *typesv1.Pod
		want *cgroupv1.PlanPodResponse
	}{
		{
			name: "Guaranteed: under kubepods, quota and memory limit on the pod",
			pod:  pod("g", ctr("app", rl(t, "cpu", "500m", "memory", "1Gi"), rl(t, "cpu", "500m", "memory", "1Gi"))),
			want: &cgroupv1.PlanPodResponse{
				QosClass: Guaranteed, CgroupParent: "/kubepods/podg",
				PodResources: settings{shares: 512, quota: 50000, period: 100000, memory: Gi, hugepages: noHugePages}.proto(),
				Containers:   []*cgroupv1.ContainerPlan{containerPlan("app", -997, settings{shares: 512, quota: 50000, period: 100000, memory: Gi, hugepages: noHugePages})},
			},
		},
		{
			name: "Burstable with a container lacking limits: shares only on the pod",
			pod: pod("b", ctr("app", rl(t, "cpu", "250m", "memory", "1Gi"), rl(t, "cpu", "1", "memory", "2Gi")),
				ctr("log", rl(t, "cpu", "100m"), nil)),
			want: &cgroupv1.PlanPodResponse{
				QosClass: Burstable, CgroupParent: "/kubepods/burstable/podb",
				PodResources: settings{shares: 358, hugepages: noHugePages}.proto(),
				Containers: []*cgroupv1.ContainerPlan{
					containerPlan("app", 750, settings{shares: 256, quota: 100000, period: 100000, memory: 2 * Gi, hugepages: noHugePages}),
					containerPlan("log", 999, settings{shares: 102, period: 100000, hugepages: noHugePages}),
				},
			},
		},
		{
			name: "Burstable with every limit: quota and memory limit on the pod",
			pod: pod("b", ctr("app", rl(t, "cpu", "250m", "memory", "1Gi"), rl(t, "cpu", "1", "memory", "2Gi")),
				ctr("log", nil, rl(t, "cpu", "100m", "memory", "64Mi"))),
			want: &cgroupv1.PlanPodResponse{
				QosClass: Burstable, CgroupParent: "/kubepods/burstable/podb",
				PodResources: settings{shares: 256, quota: 110000, period: 100000, memory: 2*Gi + 64*Mi, hugepages: noHugePages}.proto(),
				Containers: []*cgroupv1.ContainerPlan{
					containerPlan("app", 750, settings{shares: 256, quota: 100000, period: 100000, memory: 2 * Gi, hugepages: noHugePages}),
					// No cpu request: shares from the limit, as the API server's defaulting would.
					containerPlan("log", 999, settings{shares: 102, quota: 10000, period: 100000, memory: 64 * Mi, hugepages: noHugePages}),
				},
			},
		},
		{
			name: "BestEffort: minimum shares",
			pod:  pod("e", ctr("app", nil, nil)),
			want: &cgroupv1.PlanPodResponse{
				QosClass: BestEffort, CgroupParent: "/kubepods/besteffort/pode",
				PodResources: settings{shares: 2, hugepages: noHugePages}.proto(),
				Containers:   []*cgroupv1.ContainerPlan{containerPlan("app", 1000, settings{shares: 2, period: 100000, hugepages: noHugePages})},
			},
		},
		{
			name: "cpu_cfs_quota off: no quota on containers, unlimited quota on the pod",
			cfg:  func(c *Config) { c.CPUCFSQuota = false },
			pod:  pod("g", ctr("app", rl(t, "cpu", "500m", "memory", "1Gi"), rl(t, "cpu", "500m", "memory", "1Gi"))),
			want: &cgroupv1.PlanPodResponse{
				QosClass: Guaranteed, CgroupParent: "/kubepods/podg",
				PodResources: settings{shares: 512, quota: -1, period: 100000, memory: Gi, hugepages: noHugePages}.proto(),
				Containers:   []*cgroupv1.ContainerPlan{containerPlan("app", -997, settings{shares: 512, memory: Gi, hugepages: noHugePages})},
			},
		},
		{
			name: "a custom CFS period, the minimum quota and pod_pids_limit",
			cfg: func(c *Config) {
				c.CPUCFSQuotaPeriod = sdk.Duration{Duration: 50 * time.Millisecond}
				c.PodPidsLimit = 1024
			},
			pod: pod("g", ctr("app", rl(t, "cpu", "10m", "memory", "64Mi"), rl(t, "cpu", "10m", "memory", "64Mi"))),
			want: &cgroupv1.PlanPodResponse{
				QosClass: Guaranteed, CgroupParent: "/kubepods/podg",
				PodResources: settings{shares: 10, quota: 1000, period: 50000, memory: 64 * Mi, pids: 1024, hugepages: noHugePages}.proto(),
				Containers:   []*cgroupv1.ContainerPlan{containerPlan("app", -997, settings{shares: 10, quota: 1000, period: 50000, memory: 64 * Mi, hugepages: noHugePages})},
			},
		},
		{
			name: "cgroups_per_qos off: no pod cgroup, containers still planned",
			cfg: func(c *Config) {
				c.CgroupsPerQOS = false
				c.EnforceNodeAllocatable = []string{EnforceNone}
			},
			pod: pod("b", ctr("app", rl(t, "cpu", "1"), nil)),
			want: &cgroupv1.PlanPodResponse{
				QosClass:   Burstable,
				Containers: []*cgroupv1.ContainerPlan{containerPlan("app", 999, settings{shares: 1024, period: 100000, hugepages: noHugePages})},
			},
		},
		{
			name: "huge pages: the pod's total, a container's own limit, zero for the rest",
			pod: pod("g", ctr("a", rl(t, "cpu", "1", "memory", "1Gi", "hugepages-2Mi", "8Mi"), rl(t, "cpu", "1", "memory", "1Gi", "hugepages-2Mi", "8Mi")),
				ctr("b", rl(t, "cpu", "1", "memory", "1Gi", "hugepages-2048Ki", "4Mi"), rl(t, "cpu", "1", "memory", "1Gi", "hugepages-2048Ki", "4Mi"))),
			want: &cgroupv1.PlanPodResponse{
				QosClass: Guaranteed, CgroupParent: "/kubepods/podg",
				PodResources: settings{shares: 2048, quota: 200000, period: 100000, memory: 2 * Gi, hugepages: map[string]int64{"2Mi": 12 * Mi}}.proto(),
				Containers: []*cgroupv1.ContainerPlan{
					containerPlan("a", -997, settings{shares: 1024, quota: 100000, period: 100000, memory: Gi, hugepages: map[string]int64{"2Mi": 8 * Mi}}),
					containerPlan("b", -997, settings{shares: 1024, quota: 100000, period: 100000, memory: Gi, hugepages: map[string]int64{"2Mi": 4 * Mi}}),
				},
			},
		},
		{
			name: "init containers: the pod needs the larger of the biggest init container and the sum",
			pod: withInit(pod("b", ctr("app", rl(t, "cpu", "200m"), rl(t, "cpu", "500m", "memory", "1Gi"))),
				ctr("migrate", rl(t, "cpu", "1"), rl(t, "cpu", "2", "memory", "512Mi"))),
			want: &cgroupv1.PlanPodResponse{
				QosClass: Burstable, CgroupParent: "/kubepods/burstable/podb",
				PodResources: settings{shares: 1024, quota: 200000, period: 100000, memory: Gi, hugepages: noHugePages}.proto(),
				Containers: []*cgroupv1.ContainerPlan{
					containerPlan("app", 999, settings{shares: 204, quota: 50000, period: 100000, memory: Gi, hugepages: noHugePages}),
				},
				InitContainers: []*cgroupv1.ContainerPlan{
					containerPlan("migrate", 999, settings{shares: 1024, quota: 200000, period: 100000, memory: 512 * Mi, hugepages: noHugePages}),
				},
			},
		},
		{
			name: "sidecars add up with the regular containers and an init container after them",
			pod: withInit(pod("b", ctr("app", rl(t, "cpu", "200m"), rl(t, "cpu", "200m", "memory", "1Gi"))),
				sidecar("proxy", rl(t, "cpu", "300m"), rl(t, "cpu", "300m", "memory", "256Mi")),
				ctr("migrate", rl(t, "cpu", "400m"), rl(t, "cpu", "400m", "memory", "128Mi"))),
			want: &cgroupv1.PlanPodResponse{
				QosClass: Burstable, CgroupParent: "/kubepods/burstable/podb",
				// requests: max(200m+300m, 300m+400m) = 700m; limits likewise: 700m, max(1Gi+256Mi, 256Mi+128Mi).
				PodResources: settings{shares: 716, quota: 70000, period: 100000, memory: Gi + 256*Mi, hugepages: noHugePages}.proto(),
				Containers: []*cgroupv1.ContainerPlan{
					containerPlan("app", 999, settings{shares: 204, quota: 20000, period: 100000, memory: Gi, hugepages: noHugePages}),
				},
				InitContainers: []*cgroupv1.ContainerPlan{
					containerPlan("proxy", 999, settings{shares: 307, quota: 30000, period: 100000, memory: 256 * Mi, hugepages: noHugePages}),
					containerPlan("migrate", 999, settings{shares: 409, quota: 40000, period: 100000, memory: 128 * Mi, hugepages: noHugePages}),
				},
			},
		},
		{
			name: "pod-level resources: the pod's limits bound the pod and containers without their own",
			pod: withPodResources(pod("b", ctr("app", rl(t, "cpu", "100m"), nil), ctr("side", rl(t, "cpu", "100m"), rl(t, "cpu", "200m", "memory", "128Mi"))),
				rl(t, "cpu", "1", "memory", "512Mi"), rl(t, "cpu", "2", "memory", "1Gi")),
			want: &cgroupv1.PlanPodResponse{
				QosClass: Burstable, CgroupParent: "/kubepods/burstable/podb",
				PodResources: settings{shares: 1024, quota: 200000, period: 100000, memory: Gi, hugepages: noHugePages}.proto(),
				Containers: []*cgroupv1.ContainerPlan{
					// 512Mi at pod level, none claimed, 2 containers: 256Mi each.
					containerPlan("app", 938, settings{shares: 102, quota: 200000, period: 100000, memory: Gi, hugepages: noHugePages}),
					containerPlan("side", 938, settings{shares: 102, quota: 20000, period: 100000, memory: 128 * Mi, hugepages: noHugePages}),
				},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PlanPod(defaultConfig(t, tt.cfg), &cgroupv1.PlanPodRequest{Pod: tt.pod, Node: node})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("PlanPod (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanPodRefusesIncompleteRequests(t *testing.T) {
	cfg := defaultConfig(t, nil)
	burstable := pod("b", ctr("app", rl(t, "cpu", "1"), nil))
	for name, req := range map[string]*cgroupv1.PlanPodRequest{
		"no pod":                         {},
		"a pod without a uid":            {Pod: pod("", ctr("app", nil, nil))},
		"no memory capacity (Burstable)": {Pod: burstable, Node: &typesv1.Node{Capacity: rl(t, "cpu", "2")}},
	} {
		t.Run(name, func(t *testing.T) {
			if _, err := PlanPod(cfg, req); err == nil {
				t.Error("PlanPod accepted the request")
			}
		})
	}
}
