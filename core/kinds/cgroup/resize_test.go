package cgroup

import (
	"errors"
	"testing"

	"google.golang.org/protobuf/proto"

	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
)

func TestWidest(t *testing.T) {
	u64 := func(v uint64) *uint64 { return &v }
	i64 := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name      string
		old, next *cgroupv1.CgroupSettings
		want      *cgroupv1.CgroupSettings
	}{
		{name: "growing takes the new",
			old:  &cgroupv1.CgroupSettings{CpuShares: u64(102), CpuQuota: i64(20000), MemoryLimitBytes: i64(64 << 20)},
			next: &cgroupv1.CgroupSettings{CpuShares: u64(204), CpuQuota: i64(40000), MemoryLimitBytes: i64(128 << 20)},
			want: &cgroupv1.CgroupSettings{CpuShares: u64(204), CpuQuota: i64(40000), MemoryLimitBytes: i64(128 << 20)}},
		{name: "shrinking keeps the old until finished",
			old:  &cgroupv1.CgroupSettings{CpuShares: u64(204), CpuQuota: i64(40000), MemoryLimitBytes: i64(128 << 20), CpuPeriod: u64(100000)},
			next: &cgroupv1.CgroupSettings{CpuShares: u64(102), CpuQuota: i64(20000), MemoryLimitBytes: i64(64 << 20), CpuPeriod: u64(100000)},
			want: &cgroupv1.CgroupSettings{CpuShares: u64(204), CpuQuota: i64(40000), MemoryLimitBytes: i64(128 << 20), CpuPeriod: u64(100000)}},
		{name: "no limit is the widest, mixed directions",
			old:  &cgroupv1.CgroupSettings{CpuQuota: i64(-1), MemoryLimitBytes: i64(64 << 20)},
			next: &cgroupv1.CgroupSettings{CpuQuota: i64(20000), MemoryLimitBytes: i64(-1)},
			want: &cgroupv1.CgroupSettings{CpuQuota: i64(-1), MemoryLimitBytes: i64(-1)}},
		{name: "nothing before", next: &cgroupv1.CgroupSettings{CpuShares: u64(2)}, want: &cgroupv1.CgroupSettings{CpuShares: u64(2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := widest(tc.old, tc.next); !proto.Equal(got, tc.want) {
				t.Errorf("widest = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestResizeWaitsForAFreshPlanUnderTheCPUManager: with the plugin down the
// pod keeps its last plan, and a resize must wait rather than claim it,
// also under the static CPU policy, where the plan PlanPod returns is a copy
// carrying the cpusets.
func TestResizeWaitsForAFreshPlanUnderTheCPUManager(t *testing.T) {
	sw := servePlanner(t, map[string]any{"cpu_manager_policy": "static", "reserved_system_cpus": "0"})
	m, err := New(Options{Plugin: sw, Capacity: testCapacity(), Cgroups: fakeV2Tree(t, "/kubepods", "/kubepods/burstable", "/kubepods/besteffort"),
		RootDir: t.TempDir(), Runtime: &fakeRuntime{updates: map[string]string{}}, SysFS: fakeSysfs(t, "0-1", 2), Logger: testLogger(t, &logBuffer{})})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	pod := testPod("be", [2]string{"", ""})
	if _, err := m.PlanPod(ctx, pod); err != nil {
		t.Fatal(err)
	}
	sw.set(down)
	if _, _, err := m.ResizePod(ctx, pod); !errors.Is(err, errNoFreshPlan) {
		t.Fatalf("ResizePod with the plugin down = %v; want %v", err, errNoFreshPlan)
	}
}
