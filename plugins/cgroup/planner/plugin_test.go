package planner

import (
	"slices"
	"testing"

	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/sdktest"
)

var (
	_ sdk.Plugin[Config] = (*Plugin)(nil)
	_ sdk.CgroupPlanner  = (*Plugin)(nil)
	_ sdk.CgroupAdmitter = (*Plugin)(nil)
)

// The plugin as the core reaches it: its config block decodes with the
// kubelet's key names, and the three calls answer over the wire.
func TestPluginOverTheWire(t *testing.T) {
	h := sdktest.InProcess(t, sdk.Info{Kind: sdk.KindCgroup, Name: "default", Version: "0.0.0"}, &Plugin{})
	if caps := h.Capabilities(); !slices.Contains(caps, sdk.CapabilityCgroupAdmit) {
		t.Errorf("capabilities = %v, want %s", caps, sdk.CapabilityCgroupAdmit)
	}
	problems, err := h.ValidateConfig(map[string]any{"kube_reserved": map[string]any{"gpu": "1"}, "cpu_cfs_quota_period": "10s"})
	if err != nil {
		t.Fatal(err)
	}
	if len(problems) != 2 || problems[0].Path != `kube_reserved["gpu"]` || problems[1].Path != "cpu_cfs_quota_period" {
		t.Errorf("ValidateConfig = %v", problems)
	}
	if err := h.Configure(map[string]any{
		"cgroups_per_qos":          true,
		"kube_reserved":            map[string]any{"cpu": "500m", "memory": "512Mi", "pid": "1000"},
		"system_reserved":          map[string]any{"memory": "512Mi"},
		"enforce_node_allocatable": []any{"pods"},
		"cpu_cfs_quota":            true,
		"cpu_cfs_quota_period":     "50ms",
		"pod_pids_limit":           4096,
	}); err != nil {
		t.Fatalf("Configure: %v", err)
	}

	node := &typesv1.Node{Capacity: rl(t, "cpu", "2", "memory", "4Gi", "pods", "110", "pid", "32768")}
	client := h.Cgroup()
	plan, err := client.PlanPod(t.Context(), &cgroupv1.PlanPodRequest{
		Pod:  pod("u1", ctr("app", rl(t, "cpu", "200m", "memory", "1Gi"), rl(t, "cpu", "400m", "memory", "1Gi"))),
		Node: node,
	})
	if err != nil {
		t.Fatal(err)
	}
	if plan.GetCgroupParent() != "/kubepods/burstable/podu1" || plan.GetPodResources().GetPidsLimit() != 4096 ||
		plan.GetContainers()[0].GetResources().GetCpuQuota() != 20000 || plan.GetContainers()[0].GetResources().GetCpuPeriod() != 50000 {
		t.Errorf("PlanPod = %v", plan)
	}

	nodePlan, err := client.PlanNode(t.Context(), &cgroupv1.PlanNodeRequest{Node: node})
	if err != nil {
		t.Fatal(err)
	}
	kubepods := nodePlan.GetCgroups()[0].GetResources()
	if nodePlan.GetAllocatable().GetCpuMillis() != 1500 || nodePlan.GetAllocatable().GetMemoryBytes() != 3*Gi ||
		kubepods.GetPidsLimit() != 31768 || kubepods.GetMemoryLimitBytes() != 3*Gi {
		t.Errorf("PlanNode = %v", nodePlan)
	}

	node.Allocatable = nodePlan.GetAllocatable()
	verdict, err := client.Admit(t.Context(), &cgroupv1.AdmitRequest{Pod: pod("u2", ctr("app", rl(t, "cpu", "2"), nil)), Node: node})
	if err != nil {
		t.Fatal(err)
	}
	if verdict.GetAdmit() || verdict.GetReason() != "OutOfcpu" {
		t.Errorf("Admit = %v", verdict)
	}
}
