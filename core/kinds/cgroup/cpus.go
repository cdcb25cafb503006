package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/cpuset"

	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
)

// readCPUs is the node's online CPUs and their topology from sysfs (what
// cAdvisor's machine info gives the kubelet's CPU manager).
func readCPUs(sysfs string) (cpuset.CPUSet, []*cgroupv1.CPUInfo, error) {
	raw, err := os.ReadFile(filepath.Join(sysfs, "devices/system/cpu/online"))
	if err != nil {
		return cpuset.New(), nil, fmt.Errorf("online CPUs: %w", err)
	}
	online, err := cpuset.Parse(strings.TrimSpace(string(raw)))
	if err != nil {
		return cpuset.New(), nil, fmt.Errorf("online CPUs: %w", err)
	}
	var infos []*cgroupv1.CPUInfo
	for _, id := range online.List() {
		dir := filepath.Join(sysfs, "devices/system/cpu", fmt.Sprintf("cpu%d", id))
		info := &cgroupv1.CPUInfo{Id: int32(id), CoreId: sysfsInt(filepath.Join(dir, "topology/core_id")), SocketId: sysfsInt(filepath.Join(dir, "topology/physical_package_id"))}
		if nodes, _ := filepath.Glob(filepath.Join(dir, "node[0-9]*")); len(nodes) > 0 {
			n, _ := strconv.Atoi(strings.TrimPrefix(filepath.Base(nodes[0]), "node"))
			info.NumaNode = int32(n)
		}
		infos = append(infos, info)
	}
	return online, infos, nil
}

// sysfsInt is a sysfs number; a missing file (no topology) reads as 0.
func sysfsInt(path string) int32 {
	raw, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	n, _ := strconv.Atoi(strings.TrimSpace(string(raw)))
	return int32(n)
}

// ContainerCPUs are a container's exclusive CPUs (the kubelet's
// GetExclusiveCPUs), for the pod-resources API.
func (m *Manager) ContainerCPUs(uid types.UID, container string) []int64 {
	if m.cpu == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return int64s(m.cpu.state.assigned[string(uid)][container])
}

// StaticCPUPolicy reports whether the static CPU manager policy is in
// force, for the resize decision (upstream's canResizePod).
func (m *Manager) StaticCPUPolicy() bool {
	if m.cpu == nil {
		return false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.cpu.state.policy == policyStatic
}

// AllocatableCPUs are the CPUs the static policy may hand out: the online
// ones minus the reserved; none under another policy (the kubelet's
// GetAllocatableCPUs).
func (m *Manager) AllocatableCPUs() []int64 {
	if m.cpu == nil {
		return nil
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.cpu.state.policy != policyStatic || !m.cpu.known {
		return nil
	}
	return int64s(m.cpu.online.Difference(m.cpu.reserved))
}

func int64s(set cpuset.CPUSet) []int64 {
	var out []int64
	for _, id := range set.List() {
		out = append(out, int64(id))
	}
	return out
}
