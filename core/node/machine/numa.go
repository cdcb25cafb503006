package machine

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"
)

// NUMANode is one NUMA node's memory, as cAdvisor's machine info gives it
// to the kubelet's memory manager: MemTotal of the node and its huge page
// pools by resource name (pools of zero pages included).
type NUMANode struct {
	ID          int
	MemoryBytes uint64
	HugePages   map[v1.ResourceName]int64
}

// ReadNUMANodes reads the NUMA nodes under sysfs (devices/system/node). A
// kernel without NUMA has no such directory: the machine is one node 0
// with all of memTotal and the machine's pools, as cAdvisor reports it.
func ReadNUMANodes(sysfs string, memTotal int64, hugePages map[v1.ResourceName]int64) ([]NUMANode, error) {
	dirs, err := filepath.Glob(filepath.Join(sysfs, "devices/system/node/node[0-9]*"))
	if err != nil {
		return nil, err
	}
	if len(dirs) == 0 {
		return []NUMANode{{ID: 0, MemoryBytes: uint64(memTotal), HugePages: hugePages}}, nil
	}
	var nodes []NUMANode
	for _, dir := range dirs {
		id, err := strconv.Atoi(strings.TrimPrefix(filepath.Base(dir), "node"))
		if err != nil {
			continue
		}
		mem, err := nodeMemTotal(filepath.Join(dir, "meminfo"))
		if err != nil {
			return nil, err
		}
		pools, err := hugePagePools(filepath.Join(dir, "hugepages"))
		if err != nil {
			return nil, fmt.Errorf("NUMA node %d: %w", id, err)
		}
		nodes = append(nodes, NUMANode{ID: id, MemoryBytes: mem, HugePages: pools})
	}
	slices.SortFunc(nodes, func(a, b NUMANode) int { return a.ID - b.ID })
	return nodes, nil
}

// nodeMemTotal reads "Node <n> MemTotal: <kB> kB" of a node's meminfo.
func nodeMemTotal(path string) (uint64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) >= 4 && fields[2] == "MemTotal:" {
			kb, err := strconv.ParseUint(fields[3], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("%s: %w", path, err)
			}
			return kb * 1024, nil
		}
	}
	if err := s.Err(); err != nil {
		return 0, err
	}
	return 0, errors.New(path + " has no MemTotal")
}
