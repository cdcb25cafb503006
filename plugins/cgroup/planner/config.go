// Package planner decides what the kubelet's container manager decides
// (pkg/kubelet/cm, pkg/kubelet/qos, pkg/apis/core/v1/helper/qos,
// pkg/kubelet/lifecycle/predicate.go): a pod's QoS class, its cgroup and
// the resources of its containers, node allocatable and the settings of the
// kubepods and QoS cgroups, and whether a new pod fits the node. It does no
// I/O: the core sends the pods and the node, applies the plans and admits.
//
// docs/cgroups.md describes the behaviour and every departure from upstream.
package planner

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/microlet/microlet/plugins/cgroup/cpumanager"
	"github.com/microlet/microlet/plugins/cgroup/memorymanager"
	"github.com/microlet/microlet/plugins/cgroup/topology"
	"github.com/microlet/microlet/sdk"
)

// The values enforce_node_allocatable takes (upstream pkg/kubelet/types).
const (
	EnforcePods = "pods"
	EnforceNone = "none"
)

// Config is the cgroup config block. Keys are the kubelet's
// KubeletConfiguration fields in snake_case; defaults are the kubelet's.
type Config struct {
	// CgroupsPerQOS (cgroupsPerQOS) puts pods under /kubepods and its QoS
	// tiers; when false, pods get no cgroup of their own, as upstream.
	CgroupsPerQOS bool `json:"cgroups_per_qos"`
	// KubeReserved (kubeReserved) and SystemReserved (systemReserved) hold
	// back cpu, memory, ephemeral-storage and pid from pods.
	KubeReserved   map[string]sdk.Quantity `json:"kube_reserved"`
	SystemReserved map[string]sdk.Quantity `json:"system_reserved"`
	// EnforceNodeAllocatable (enforceNodeAllocatable): "pods" limits the
	// kubepods cgroup to capacity minus the reservations; "none" does not.
	EnforceNodeAllocatable []string `json:"enforce_node_allocatable"`
	// CPUCFSQuota (cpuCFSQuota) enforces CPU limits with CFS quota.
	CPUCFSQuota bool `json:"cpu_cfs_quota"`
	// CPUCFSQuotaPeriod (cpuCFSQuotaPeriod) is the CFS period, 1ms to 1s.
	CPUCFSQuotaPeriod sdk.Duration `json:"cpu_cfs_quota_period"`
	// PodPidsLimit (podPidsLimit) is each pod's pids.max; -1 or 0: none.
	PodPidsLimit int64 `json:"pod_pids_limit"`
	// CPUManagerPolicy (cpuManagerPolicy): "none" or "static" (exclusive
	// CPUs for Guaranteed pods' containers with integer CPU requests).
	CPUManagerPolicy string `json:"cpu_manager_policy"`
	// CPUManagerPolicyOptions (cpuManagerPolicyOptions): full-pcpus-only,
	// strict-cpu-reservation, "true" or "false".
	CPUManagerPolicyOptions map[string]string `json:"cpu_manager_policy_options"`
	// ReservedSystemCPUs (reservedSystemCPUs): CPUs no container gets for
	// itself, in Linux list form ("0", "0-1").
	ReservedSystemCPUs string `json:"reserved_system_cpus"`
	// MemoryManagerPolicy (memoryManagerPolicy): "None" or "Static"
	// (Guaranteed pods' memory pinned to NUMA nodes).
	MemoryManagerPolicy string `json:"memory_manager_policy"`
	// ReservedMemory (reservedMemory): what the system keeps of each NUMA
	// node's memory and hugepages; under Static, per type it adds up to
	// kube_reserved + system_reserved + the eviction hard threshold.
	ReservedMemory []MemoryReservation `json:"reserved_memory"`
	// TopologyManagerPolicy (topologyManagerPolicy): "none",
	// "best-effort", "restricted" or "single-numa-node".
	TopologyManagerPolicy string `json:"topology_manager_policy"`
	// TopologyManagerScope (topologyManagerScope): "container" or "pod".
	TopologyManagerScope string `json:"topology_manager_scope"`
}

// MemoryReservation is one reserved_memory entry (upstream
// MemoryReservation).
type MemoryReservation struct {
	NUMANode int                     `json:"numa_node"`
	Limits   map[string]sdk.Quantity `json:"limits"`
}

// SetDefaults applies the kubelet's defaults; the SDK calls it before decoding.
func (c *Config) SetDefaults() {
	*c = Config{
		CgroupsPerQOS:          true,
		EnforceNodeAllocatable: []string{EnforcePods},
		CPUCFSQuota:            true,
		CPUCFSQuotaPeriod:      sdk.Duration{Duration: 100 * time.Millisecond},
		PodPidsLimit:           -1,
		CPUManagerPolicy:       cpumanager.PolicyNone,
		MemoryManagerPolicy:    memorymanager.PolicyNone,
		TopologyManagerPolicy:  topology.PolicyNone,
		TopologyManagerScope:   topology.ScopeContainer,
	}
}

// reservable are the resources kube_reserved and system_reserved may hold
// back (upstream cmd/kubelet/app/server.go parseResourceList).
var reservable = []string{resourceCPU, resourceMemory, resourceEphemeralStorage, resourcePID}

// Validate applies the kubelet's checks (ValidateKubeletConfiguration,
// parseResourceList) and reports every problem at once.
func (c *Config) Validate() error {
	var errs sdk.ConfigErrors
	fail := func(path, format string, args ...any) {
		errs = append(errs, sdk.ConfigError{Path: path, Message: fmt.Sprintf(format, args...)})
	}
	for _, block := range []struct {
		key  string
		list map[string]sdk.Quantity
	}{{"kube_reserved", c.KubeReserved}, {"system_reserved", c.SystemReserved}} {
		for _, name := range sortedKeys(block.list) {
			path := fmt.Sprintf("%s[%q]", block.key, name)
			switch {
			case !slices.Contains(reservable, name):
				fail(path, "cannot reserve %q resource; expected one of %s", name, strings.Join(reservable, ", "))
			case block.list[name].Sign() < 0:
				fail(path, "resource quantity for %q cannot be negative: %s", name, block.list[name])
			}
		}
	}
	seen := map[string]bool{}
	for i, v := range c.EnforceNodeAllocatable {
		path := fmt.Sprintf("enforce_node_allocatable[%d]", i)
		switch {
		case seen[v]:
			fail(path, "duplicated enforcement %q", v)
		case v == EnforceNone && len(c.EnforceNodeAllocatable) > 1:
			fail(path, "may not contain additional enforcements when %q is specified", EnforceNone)
		case v == EnforcePods && !c.CgroupsPerQOS:
			fail(path, "cgroups_per_qos must be true when %q is contained in enforce_node_allocatable", EnforcePods)
		case v == "system-reserved", v == "kube-reserved", v == "system-reserved-compressible", v == "kube-reserved-compressible":
			fail(path, "%q is not supported: microlet has no system_reserved_cgroup or kube_reserved_cgroup to enforce it on; expected %q or %q", v, EnforcePods, EnforceNone)
		case v != EnforcePods && v != EnforceNone:
			fail(path, "unknown enforcement %q; expected %q or %q", v, EnforcePods, EnforceNone)
		}
		seen[v] = true
	}
	if p := c.CPUCFSQuotaPeriod.Duration; p < time.Millisecond || p > time.Second {
		fail("cpu_cfs_quota_period", "must be between 1ms and 1s, inclusive; got %s", c.CPUCFSQuotaPeriod)
	}
	if c.PodPidsLimit < -1 {
		fail("pod_pids_limit", "expected a positive limit, or -1 or 0 for none; got %d", c.PodPidsLimit)
	}
	if _, err := c.CPUPolicy(); err != nil {
		fail("cpu_manager_policy", "%v", err)
	}
	if _, err := c.MemoryPolicy(); err != nil {
		fail("memory_manager_policy", "%v", err)
	}
	// Each key checked on its own, so that the error names it.
	if _, err := topology.NewPolicy(c.TopologyManagerPolicy, topology.ScopeContainer); err != nil {
		fail("topology_manager_policy", "%v", err)
	}
	if _, err := topology.NewPolicy(topology.PolicyNone, c.TopologyManagerScope); err != nil {
		fail("topology_manager_scope", "%v", err)
	}
	if len(errs) > 0 {
		return errs
	}
	return nil
}

// CPUPolicy is the CPU manager the config asks for.
func (c *Config) CPUPolicy() (*cpumanager.Policy, error) {
	return cpumanager.NewPolicy(c.CPUManagerPolicy, c.CPUManagerPolicyOptions, c.ReservedSystemCPUs, c.reserved()[resourceCPU])
}

// MemoryPolicy is the memory manager the config asks for.
func (c *Config) MemoryPolicy() (*memorymanager.Policy, error) {
	var reserved []memorymanager.Reservation
	for _, r := range c.ReservedMemory {
		limits := map[string]int64{}
		for t, q := range r.Limits {
			limits[t] = q.Value()
		}
		reserved = append(reserved, memorymanager.Reservation{NUMANode: r.NUMANode, Limits: limits})
	}
	return memorymanager.NewPolicy(c.MemoryManagerPolicy, reserved)
}

// Managers are the resource managers the config asks for.
func (c *Config) Managers() (*Managers, error) {
	cpu, err := c.CPUPolicy()
	if err != nil {
		return nil, fmt.Errorf("cpu_manager_policy: %w", err)
	}
	mem, err := c.MemoryPolicy()
	if err != nil {
		return nil, fmt.Errorf("memory_manager_policy: %w", err)
	}
	top, err := topology.NewPolicy(c.TopologyManagerPolicy, c.TopologyManagerScope)
	if err != nil {
		return nil, fmt.Errorf("topology_manager_policy: %w", err)
	}
	return &Managers{CPU: cpu, Memory: mem, Topology: top}, nil
}

// enforcesPods says whether kubepods is limited to capacity minus the
// reservations.
func (c *Config) enforcesPods() bool {
	return c.CgroupsPerQOS && slices.Contains(c.EnforceNodeAllocatable, EnforcePods)
}

// periodMicros is the CFS period in microseconds, as the kernel takes it.
func (c *Config) periodMicros() uint64 {
	return uint64(c.CPUCFSQuotaPeriod.Duration / time.Microsecond)
}

// reserved is kube_reserved plus system_reserved in canonical units.
func (c *Config) reserved() amounts {
	total := amounts{}
	for _, list := range []map[string]sdk.Quantity{c.KubeReserved, c.SystemReserved} {
		for name, q := range list {
			v := q.Value()
			if name == resourceCPU {
				v = q.MilliValue()
			}
			total.add(amounts{name: v})
		}
	}
	return total
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
