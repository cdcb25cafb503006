package cgroup

import (
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

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
