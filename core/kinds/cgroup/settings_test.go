package cgroup

import (
	"strings"
	"testing"

	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
)

func TestHugePageUnit(t *testing.T) {
	for size, want := range map[string]string{
		"2Mi": "2MB", "1Gi": "1GB", "2048Ki": "2MB", "64Ki": "64KB", "16Gi": "16GB", "2097152": "2MB", "512": "512B",
	} {
		if got, err := hugePageUnit(size); err != nil || got != want {
			t.Errorf("hugePageUnit(%q) = %q, %v; want %q", size, got, err, want)
		}
	}
	for _, size := range []string{"lots", "0", "-2Mi", "1500Ki"} {
		if got, err := hugePageUnit(size); err == nil {
			t.Errorf("hugePageUnit(%q) = %q, want an error", size, got)
		}
	}
}

// cpu.weight from shares, as the kubelet converts (not runc's quadratic
// mapping).
func TestCPUWeight(t *testing.T) {
	for shares, want := range map[uint64]uint64{2: 1, 3: 1, 102: 4, 1024: 39, 2048: 79, 262143: 9999, 262144: 10000, 300000: 10000} {
		if got := cpuWeight(shares); got != want {
			t.Errorf("cpuWeight(%d) = %d, want %d", shares, got, want)
		}
	}
}

func TestCheckSettings(t *testing.T) {
	i64 := func(v int64) *int64 { return &v }
	u64 := func(v uint64) *uint64 { return &v }
	tests := []struct {
		name string
		s    *cgroupv1.CgroupSettings
		want []string // substrings of the error; none: valid
	}{
		{"nil", nil, nil},
		{"everything at its bounds", &cgroupv1.CgroupSettings{CpuShares: u64(2), CpuQuota: i64(1000), CpuPeriod: u64(1000000),
			MemoryLimitBytes: i64(-1), PidsLimit: i64(-1), HugepageLimits: map[string]int64{"2Mi": 0, "1Gi": 1 << 62}}, nil},
		{"everything wrong", &cgroupv1.CgroupSettings{CpuShares: u64(300000), CpuQuota: i64(999), CpuPeriod: u64(999),
			MemoryLimitBytes: i64(0), PidsLimit: i64(0), HugepageLimits: map[string]int64{"huge": 1, "2Mi": -1}},
			[]string{"cpu_shares is 300000", "cpu_quota is 999", "cpu_period is 999", "memory_limit_bytes is 0", "pids_limit is 0",
				`page size "huge"`, `hugepage_limits["2Mi"] is -1`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := checkSettings(tt.s)
			if (err != nil) != (tt.want != nil) {
				t.Fatalf("checkSettings = %v", err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

func TestCheckCgroupPath(t *testing.T) {
	for _, p := range []string{"/kubepods/podx", "/a"} {
		if err := checkCgroupPath(p); err != nil {
			t.Errorf("checkCgroupPath(%q) = %v", p, err)
		}
	}
	for _, p := range []string{"/", "kubepods", "/kubepods/../x", "/kubepods/", ""} {
		if err := checkCgroupPath(p); err == nil {
			t.Errorf("checkCgroupPath(%q) accepted", p)
		}
	}
}
