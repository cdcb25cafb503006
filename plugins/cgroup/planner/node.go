package planner

import (
	"fmt"
	"strings"

	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
	"github.com/microlet/microlet/sdk"
)

// PlanNode decides node allocatable (upstream nodestatus.MachineInfo with
// GetNodeAllocatableReservation) and the settings of kubepods and its QoS
// tiers (upstream node_container_manager_linux.go and
// qos_container_manager_linux.go).
func PlanNode(cfg *Config, req *cgroupv1.PlanNodeRequest) (*cgroupv1.PlanNodeResponse, error) {
	capacity := amountsOf(req.GetNode().GetCapacity())
	if len(capacity) == 0 {
		return nil, sdk.Invalid("the request's node has no capacity")
	}
	reserved := cfg.reserved()
	evictionReserved := amountsOf(req.GetEvictionReserved())
	if err := checkReservation(capacity, reserved, evictionReserved); err != nil {
		return nil, err
	}
	resp := &cgroupv1.PlanNodeResponse{Allocatable: allocatable(capacity, reserved, evictionReserved).list()}
	if !cfg.CgroupsPerQOS {
		return resp, nil
	}
	sizes := pageSizes(capacity)
	var burstableCPU int64
	for _, pod := range req.GetPods() {
		if PodQOS(pod) == Burstable {
			burstableCPU += podRequests(pod)[resourceCPU]
		}
	}
	burstableShares, bestEffortShares := MilliCPUToShares(burstableCPU), uint64(MinShares)
	resp.Cgroups = []*cgroupv1.QOSCgroup{
		{Cgroup: kubepodsCgroup, Resources: kubepodsSettings(cfg, capacity, reserved, sizes)},
		{Cgroup: burstableCgroup, Resources: &cgroupv1.CgroupSettings{
			CpuShares:      &burstableShares,
			HugepageLimits: hugePageLimits(sizes, hugePagesUnbounded, nil, false),
		}},
		{Cgroup: bestEffortCgroup, Resources: &cgroupv1.CgroupSettings{
			CpuShares:      &bestEffortShares,
			HugepageLimits: hugePageLimits(sizes, hugePagesUnbounded, nil, false),
		}},
	}
	return resp, nil
}

// kubepodsSettings are the settings of kubepods (upstream getCgroupConfig):
// shares, memory and pids of the node's capacity, or of capacity minus
// kube_reserved and system_reserved when "pods" is enforced; the eviction
// reservation stays inside kubepods, as upstream. Huge pages are unbounded:
// upstream's periodic QoS update leaves kubepods so within a minute.
func kubepodsSettings(cfg *Config, capacity, reserved amounts, sizes []int64) *cgroupv1.CgroupSettings {
	limits := capacity
	if cfg.enforcesPods() {
		limits = subtractFloorZero(capacity, reserved)
	}
	s := &cgroupv1.CgroupSettings{HugepageLimits: hugePageLimits(sizes, hugePagesUnbounded, nil, false)}
	if cpu, ok := limits[resourceCPU]; ok {
		shares := MilliCPUToShares(cpu)
		s.CpuShares = &shares
	}
	if memory, ok := limits[resourceMemory]; ok {
		s.MemoryLimitBytes = &memory
	}
	if pids, ok := limits[resourcePID]; ok {
		s.PidsLimit = &pids
	}
	return s
}

// allocatable is what pods may request: capacity minus the reservations
// and the eviction thresholds, never below zero, and memory less the
// memory held in huge pages. The internal pid resource is left out, as
// from upstream's node status.
func allocatable(capacity, reserved, evictionReserved amounts) amounts {
	held := reserved.clone()
	held.add(evictionReserved)
	out := subtractFloorZero(capacity, held)
	delete(out, resourcePID)
	if memory, ok := out[resourceMemory]; ok {
		for name, v := range capacity {
			if isHugePages(name) {
				memory -= v
			}
		}
		out[resourceMemory] = max(memory, 0)
	}
	return out
}

// checkReservation refuses reservations beyond capacity, with upstream's
// message (validateNodeAllocatable).
func checkReservation(capacity, reserved, evictionReserved amounts) error {
	held := reserved.clone()
	held.add(evictionReserved)
	var problems []string
	for _, name := range sortedKeys(capacity) {
		if name == resourcePID {
			continue
		}
		if r := held[name]; r > capacity[name] {
			problems = append(problems, fmt.Sprintf("Resource %q has a reservation of %s but capacity of %s. Expected capacity >= reservation.",
				name, formatAmount(name, r), formatAmount(name, capacity[name])))
		}
	}
	if len(problems) > 0 {
		return sdk.Invalid("invalid Node Allocatable configuration. %s", strings.Join(problems, " "))
	}
	return nil
}

// subtractFloorZero is a - b for every resource of a, never below zero.
func subtractFloorZero(a, b amounts) amounts {
	out := make(amounts, len(a))
	for name, v := range a {
		out[name] = max(v-b[name], 0)
	}
	return out
}

// formatAmount prints an amount as a Kubernetes quantity: CPU in cores or
// millicores, counts in decimal, the rest in binary units.
func formatAmount(name string, v int64) string {
	switch name {
	case resourceCPU:
		return sdk.MustParseQuantity(fmt.Sprintf("%dm", v)).String()
	case resourcePods, resourcePID:
		return sdk.DecimalQuantity(v).String()
	}
	if isExtended(name) {
		return sdk.DecimalQuantity(v).String()
	}
	return sdk.BinaryQuantity(v).String()
}
