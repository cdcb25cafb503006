package planner

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"google.golang.org/protobuf/testing/protocmp"

	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk"
)

func TestPlanNode(t *testing.T) {
	capacity := rl(t, "cpu", "4", "memory", "8Gi", "ephemeral-storage", "100Gi", "pods", "110", "pid", "32768",
		"hugepages-2Mi", "1Gi", "hugepages-1Gi", "0")
	unbounded := map[string]int64{"2Mi": hugePagesUnbounded, "1Gi": hugePagesUnbounded}
	burstablePods := []*typesv1.Pod{
		pod("b1", ctr("app", rl(t, "cpu", "250m"), nil)),
		withInit(pod("b2", ctr("app", rl(t, "cpu", "100m"), nil)), ctr("init", rl(t, "cpu", "1"), nil)),
		pod("g", ctr("app", rl(t, "cpu", "1", "memory", "1Gi"), rl(t, "cpu", "1", "memory", "1Gi"))),
		pod("e", ctr("app", nil, nil)),
	}
	reserve := func(c *Config) {
		c.KubeReserved = map[string]sdk.Quantity{"cpu": sdk.MustParseQuantity("500m"), "memory": sdk.MustParseQuantity("1Gi"), "pid": sdk.MustParseQuantity("1000")}
		c.SystemReserved = map[string]sdk.Quantity{"memory": sdk.MustParseQuantity("512Mi"), "ephemeral-storage": sdk.MustParseQuantity("10Gi")}
	}
	tests := []struct {
		name     string
		cfg      func(*Config)
		eviction *typesv1.ResourceList
		pods     []*typesv1.Pod
		want     *cgroupv1.PlanNodeResponse
	}{
		{
			name: "no reservations: allocatable is capacity less huge pages from memory",
			pods: burstablePods,
			want: &cgroupv1.PlanNodeResponse{
				Allocatable: rl(t, "cpu", "4", "memory", "7Gi", "ephemeral-storage", "100Gi", "pods", "110", "hugepages-2Mi", "1Gi", "hugepages-1Gi", "0"),
				Cgroups: []*cgroupv1.QOSCgroup{
					{Cgroup: "/kubepods", Resources: settings{shares: 4096, memory: 8 * Gi, pids: 32768, hugepages: unbounded}.proto()},
					// b1 250m + b2 max(100m, 1) = 1250m.
					{Cgroup: "/kubepods/burstable", Resources: settings{shares: 1280, hugepages: unbounded}.proto()},
					{Cgroup: "/kubepods/besteffort", Resources: settings{shares: 2, hugepages: unbounded}.proto()},
				},
			},
		},
		{
			// memory: 8Gi - 1Gi - 512Mi - 100Mi eviction - 1Gi huge pages.
			name:     "reservations and eviction thresholds: kubepods holds the eviction reservation, allocatable does not",
			cfg:      reserve,
			eviction: rl(t, "memory", "100Mi", "ephemeral-storage", "10Gi"),
			want: &cgroupv1.PlanNodeResponse{
				Allocatable: rl(t, "cpu", "3500m", "memory", "5532Mi", "ephemeral-storage", "80Gi", "pods", "110", "hugepages-2Mi", "1Gi", "hugepages-1Gi", "0"),
				Cgroups: []*cgroupv1.QOSCgroup{
					{Cgroup: "/kubepods", Resources: settings{shares: 3584, memory: 6*Gi + 512*Mi, pids: 31768, hugepages: unbounded}.proto()},
					{Cgroup: "/kubepods/burstable", Resources: settings{shares: 2, hugepages: unbounded}.proto()},
					{Cgroup: "/kubepods/besteffort", Resources: settings{shares: 2, hugepages: unbounded}.proto()},
				},
			},
		},
		{
			name: `enforce_node_allocatable "none": kubepods gets the whole capacity`,
			cfg: func(c *Config) {
				reserve(c)
				c.EnforceNodeAllocatable = []string{EnforceNone}
			},
			want: &cgroupv1.PlanNodeResponse{
				Allocatable: rl(t, "cpu", "3500m", "memory", "5632Mi", "ephemeral-storage", "90Gi", "pods", "110", "hugepages-2Mi", "1Gi", "hugepages-1Gi", "0"),
				Cgroups: []*cgroupv1.QOSCgroup{
					{Cgroup: "/kubepods", Resources: settings{shares: 4096, memory: 8 * Gi, pids: 32768, hugepages: unbounded}.proto()},
					{Cgroup: "/kubepods/burstable", Resources: settings{shares: 2, hugepages: unbounded}.proto()},
					{Cgroup: "/kubepods/besteffort", Resources: settings{shares: 2, hugepages: unbounded}.proto()},
				},
			},
		},
		{
			name: "cgroups_per_qos off: allocatable only",
			cfg: func(c *Config) {
				c.CgroupsPerQOS = false
				c.EnforceNodeAllocatable = nil
			},
			pods: burstablePods,
			want: &cgroupv1.PlanNodeResponse{
				Allocatable: rl(t, "cpu", "4", "memory", "7Gi", "ephemeral-storage", "100Gi", "pods", "110", "hugepages-2Mi", "1Gi", "hugepages-1Gi", "0"),
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := PlanNode(defaultConfig(t, tt.cfg), &cgroupv1.PlanNodeRequest{
				Node: &typesv1.Node{Capacity: capacity}, Pods: tt.pods, EvictionReserved: tt.eviction,
			})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got, protocmp.Transform()); diff != "" {
				t.Errorf("PlanNode (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPlanNodeRefusesReservationsBeyondCapacity(t *testing.T) {
	cfg := defaultConfig(t, func(c *Config) {
		c.KubeReserved = map[string]sdk.Quantity{"cpu": sdk.MustParseQuantity("1500m"), "memory": sdk.MustParseQuantity("1Gi")}
	})
	_, err := PlanNode(cfg, &cgroupv1.PlanNodeRequest{
		Node:             &typesv1.Node{Capacity: rl(t, "cpu", "1", "memory", "2Gi")},
		EvictionReserved: rl(t, "memory", "1025Mi"),
	})
	want := `invalid Node Allocatable configuration. Resource "cpu" has a reservation of 1500m but capacity of 1. Expected capacity >= reservation. ` +
		`Resource "memory" has a reservation of 2049Mi but capacity of 2Gi. Expected capacity >= reservation.`
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("PlanNode error = %v\nwant it to contain %s", err, want)
	}
	if _, err := PlanNode(cfg, &cgroupv1.PlanNodeRequest{}); err == nil {
		t.Error("PlanNode accepted a node without capacity")
	}
}
