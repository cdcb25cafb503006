package planner

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/microlet/microlet/sdk"
)

func TestConfigDefaultsAreTheKubelets(t *testing.T) {
	var cfg Config
	cfg.SetDefaults()
	if !cfg.CgroupsPerQOS || !cfg.CPUCFSQuota || cfg.CPUCFSQuotaPeriod.Duration != 100*time.Millisecond ||
		cfg.PodPidsLimit != -1 || !slices.Equal(cfg.EnforceNodeAllocatable, []string{"pods"}) ||
		len(cfg.KubeReserved) != 0 || len(cfg.SystemReserved) != 0 || cfg.MemoryManagerPolicy != "None" ||
		cfg.TopologyManagerPolicy != "none" || cfg.TopologyManagerScope != "container" {
		t.Errorf("defaults = %+v", cfg)
	}
	if err := cfg.Validate(); err != nil {
		t.Errorf("the defaults do not validate: %v", err)
	}
}

func TestConfigValidate(t *testing.T) {
	q := sdk.MustParseQuantity
	tests := []struct {
		name  string
		edit  func(*Config)
		paths []string
	}{
		{"every reservable resource", func(c *Config) {
			c.KubeReserved = map[string]sdk.Quantity{"cpu": q("100m"), "memory": q("256Mi"), "ephemeral-storage": q("1Gi"), "pid": q("1000")}
			c.SystemReserved = map[string]sdk.Quantity{"memory": q("0")}
		}, nil},
		{"resources the kubelet cannot reserve", func(c *Config) {
			c.KubeReserved = map[string]sdk.Quantity{"pods": q("10"), "hugepages-2Mi": q("2Mi")}
		}, []string{`kube_reserved["hugepages-2Mi"]`, `kube_reserved["pods"]`}},
		{"a negative reservation", func(c *Config) {
			c.SystemReserved = map[string]sdk.Quantity{"cpu": q("-1")}
		}, []string{`system_reserved["cpu"]`}},
		{"none alone", func(c *Config) { c.EnforceNodeAllocatable = []string{"none"} }, nil},
		{"none with others", func(c *Config) { c.EnforceNodeAllocatable = []string{"pods", "none"} }, []string{"enforce_node_allocatable[1]"}},
		{"duplicates", func(c *Config) { c.EnforceNodeAllocatable = []string{"pods", "pods"} }, []string{"enforce_node_allocatable[1]"}},
		{"reserved cgroups are not supported", func(c *Config) { c.EnforceNodeAllocatable = []string{"pods", "kube-reserved"} }, []string{"enforce_node_allocatable[1]"}},
		{"unknown enforcement", func(c *Config) { c.EnforceNodeAllocatable = []string{"everything"} }, []string{"enforce_node_allocatable[0]"}},
		{"pods needs cgroups_per_qos", func(c *Config) { c.CgroupsPerQOS = false }, []string{"enforce_node_allocatable[0]"}},
		{"period below 1ms", func(c *Config) { c.CPUCFSQuotaPeriod.Duration = 999 * time.Microsecond }, []string{"cpu_cfs_quota_period"}},
		{"period above 1s", func(c *Config) { c.CPUCFSQuotaPeriod.Duration = time.Second + 1 }, []string{"cpu_cfs_quota_period"}},
		{"period bounds are inclusive", func(c *Config) { c.CPUCFSQuotaPeriod.Duration = time.Second }, nil},
		{"pod_pids_limit 0 means none", func(c *Config) { c.PodPidsLimit = 0 }, nil},
		{"pod_pids_limit below -1", func(c *Config) { c.PodPidsLimit = -2 }, []string{"pod_pids_limit"}},
		{"the static memory manager with reserved memory", func(c *Config) {
			c.MemoryManagerPolicy = "Static"
			c.ReservedMemory = []MemoryReservation{{NUMANode: 0, Limits: map[string]sdk.Quantity{"memory": q("1Gi"), "hugepages-2Mi": q("0")}}}
		}, nil},
		{"the static memory manager without", func(c *Config) { c.MemoryManagerPolicy = "Static" }, []string{"memory_manager_policy"}},
		{"reserved memory of a non-memory type", func(c *Config) {
			c.MemoryManagerPolicy = "Static"
			c.ReservedMemory = []MemoryReservation{{NUMANode: 0, Limits: map[string]sdk.Quantity{"memory": q("1Gi"), "cpu": q("1")}}}
		}, []string{"memory_manager_policy"}},
		{"memory manager policies are capitalised", func(c *Config) { c.MemoryManagerPolicy = "static" }, []string{"memory_manager_policy"}},
		{"every topology policy and scope", func(c *Config) { c.TopologyManagerPolicy, c.TopologyManagerScope = "restricted", "pod" }, nil},
		{"unknown topology scope", func(c *Config) { c.TopologyManagerScope = "node" }, []string{"topology_manager_scope"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var cfg Config
			cfg.SetDefaults()
			tt.edit(&cfg)
			err := cfg.Validate()
			var got []string
			var errs sdk.ConfigErrors
			if errors.As(err, &errs) {
				for _, e := range errs {
					got = append(got, e.Path)
				}
			} else if err != nil {
				t.Fatalf("Validate returned %T, want sdk.ConfigErrors: %v", err, err)
			}
			if !slices.Equal(got, tt.paths) {
				t.Errorf("paths with errors = %q, want %q (%v)", got, tt.paths, err)
			}
		})
	}
}
