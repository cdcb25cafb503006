package machine

import (
	"os"
	"path/filepath"
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestReadNUMANodes(t *testing.T) {
	sys := t.TempDir()
	write := func(rel, content string) {
		full := filepath.Join(sys, rel)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A kernel without NUMA: one node 0 with the machine's memory.
	nodes, err := ReadNUMANodes(sys, 8<<30, map[v1.ResourceName]int64{"hugepages-2Mi": 0})
	if err != nil || len(nodes) != 1 || nodes[0].ID != 0 || nodes[0].MemoryBytes != 8<<30 {
		t.Fatalf("without NUMA: %+v, %v", nodes, err)
	}
	write("devices/system/node/node1/meminfo", "Node 1 MemTotal:        2048 kB\nNode 1 MemFree:         1024 kB\n")
	write("devices/system/node/node1/hugepages/hugepages-2048kB/nr_hugepages", "3\n")
	write("devices/system/node/node0/meminfo", "Node 0 MemTotal:        4096 kB\n")
	write("devices/system/node/online", "0-1\n")
	nodes, err = ReadNUMANodes(sys, 8<<30, nil)
	if err != nil || len(nodes) != 2 {
		t.Fatalf("two nodes: %+v, %v", nodes, err)
	}
	if nodes[0].ID != 0 || nodes[0].MemoryBytes != 4096<<10 || len(nodes[0].HugePages) != 0 {
		t.Errorf("node 0: %+v", nodes[0])
	}
	if nodes[1].ID != 1 || nodes[1].MemoryBytes != 2048<<10 || nodes[1].HugePages["hugepages-2Mi"] != 3*2<<20 {
		t.Errorf("node 1: %+v", nodes[1])
	}
	write("devices/system/node/node2/meminfo", "Node 2 MemFree: 1 kB\n")
	if _, err := ReadNUMANodes(sys, 8<<30, nil); err == nil {
		t.Error("a node without MemTotal was read")
	}
}
