package planner

import (
	"fmt"
	"strings"
	"testing"

	"github.com/microlet/microlet/sdk"

	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// The resource managers together on a node of one NUMA node with 2 CPUs
// and 4Gi, 200Mi held back by node allocatable.
func TestManagersAllocate(t *testing.T) {
	staticAll := func(c *Config) {
		c.CPUManagerPolicy, c.ReservedSystemCPUs = "static", "0"
		c.MemoryManagerPolicy = "Static"
		c.ReservedMemory = []MemoryReservation{{NUMANode: 0, Limits: map[string]sdk.Quantity{"memory": sdk.MustParseQuantity("200Mi")}}}
		c.TopologyManagerPolicy = "single-numa-node"
	}
	node := &typesv1.Node{Capacity: rl(t, "cpu", "2", "memory", "4Gi"), Allocatable: rl(t, "cpu", "2", "memory", "3896Mi")}
	g := pod("g", ctr("app", rl(t, "cpu", "1", "memory", "1Gi"), rl(t, "cpu", "1", "memory", "1Gi", "example.com/dev", "1")))
	g.QosClass = Guaranteed
	cpus := []*cgroupv1.CPUInfo{{Id: 0, CoreId: 0}, {Id: 1, CoreId: 1}}
	numa := []*cgroupv1.NUMANode{{Id: 0, MemoryBytes: 4 << 30}}
	dev := func(nodes ...int64) []*cgroupv1.ResourceDevices {
		return []*cgroupv1.ResourceDevices{{Resource: "example.com/dev", Devices: []*cgroupv1.DeviceNUMA{{Id: "d", NumaNodes: nodes, Free: true}}}}
	}
	for _, tc := range []struct {
		name    string
		config  func(*Config)
		node    *typesv1.Node
		devices []*cgroupv1.ResourceDevices
		want    string // "cpu=<set> mem=<nodes>:<size>", or a refusal reason
		err     string
	}{
		{name: "everything aligns on node 0", config: staticAll, node: node, devices: dev(0), want: "cpu=1 mem=[0]:1073741824"},
		{name: "a device without topology has no preference", config: staticAll, node: node, devices: dev(), want: "cpu=1 mem=[0]:1073741824"},
		{name: "a device on a node the machine lacks", config: staticAll, node: node, devices: dev(1), want: "TopologyAffinityError"},
		{name: "the same device without a topology policy", config: func(c *Config) { staticAll(c); c.TopologyManagerPolicy = "none" }, node: node, devices: dev(1),
			want: "cpu=1 mem=[0]:1073741824"},
		{name: "reserved memory not what node allocatable holds back", config: staticAll,
			node: &typesv1.Node{Capacity: node.Capacity, Allocatable: rl(t, "cpu", "2", "memory", "3Gi")}, err: "is not equal to the value"},
		{name: "the None policies pin nothing", config: func(*Config) {}, node: node, devices: dev(1), want: "cpu= mem="},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var cfg Config
			cfg.SetDefaults()
			tc.config(&cfg)
			if err := cfg.Validate(); err != nil {
				t.Fatal(err)
			}
			m, err := cfg.Managers()
			if err != nil {
				t.Fatal(err)
			}
			resp, err := m.Allocate(&cgroupv1.AllocateCPUsRequest{Pod: g, Node: tc.node, Cpus: cpus, NumaNodes: numa, Devices: tc.devices})
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %v, want %q", err, tc.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := resp.GetReason()
			if resp.GetAdmit() {
				got = "cpu="
				for _, a := range resp.GetAssignments() {
					got += a.GetCpusetCpus()
				}
				got += " mem="
				for _, a := range resp.GetMemoryAssignments() {
					for _, b := range a.GetBlocks() {
						got += fmt.Sprintf("%v:%d", b.GetNumaAffinity(), b.GetSize())
					}
				}
			}
			if got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// On two NUMA nodes whose free device sits on node 1, the containers
// asking for devices are told node 1, the hint their devices are to be
// picked on (upstream's device manager reads it from the topology
// manager's store); a container without devices and a policy without
// hints give none.
func TestManagersDeviceAffinities(t *testing.T) {
	node := &typesv1.Node{Capacity: rl(t, "cpu", "4", "memory", "8Gi"), Allocatable: rl(t, "cpu", "4", "memory", "8Gi")}
	devs := func() *typesv1.ResourceList { return rl(t, "example.com/dev", "1") }
	p := withInit(pod("p", ctr("app", devs(), devs()), ctr("plain", nil, nil)), ctr("prep", devs(), devs()))
	cpus := []*cgroupv1.CPUInfo{{Id: 0, CoreId: 0}, {Id: 1, CoreId: 1}, {Id: 2, CoreId: 2, NumaNode: 1}, {Id: 3, CoreId: 3, NumaNode: 1}}
	numa := []*cgroupv1.NUMANode{{Id: 0, MemoryBytes: 4 << 30}, {Id: 1, MemoryBytes: 4 << 30}}
	devices := []*cgroupv1.ResourceDevices{{Resource: "example.com/dev", Devices: []*cgroupv1.DeviceNUMA{
		{Id: "a", NumaNodes: []int64{0}}, {Id: "b", NumaNodes: []int64{1}, Free: true}, {Id: "c", NumaNodes: []int64{0}},
	}}}
	for _, tc := range []struct {
		policy, scope, want string
	}{
		{policy: "single-numa-node", scope: "container", want: "prep:[1] app:[1]"},
		{policy: "best-effort", scope: "pod", want: "prep:[1] app:[1]"},
		{policy: "none", scope: "container", want: ""},
	} {
		t.Run(tc.policy+"/"+tc.scope, func(t *testing.T) {
			m, err := defaultConfig(t, func(c *Config) { c.TopologyManagerPolicy, c.TopologyManagerScope = tc.policy, tc.scope }).Managers()
			if err != nil {
				t.Fatal(err)
			}
			resp, err := m.Allocate(&cgroupv1.AllocateCPUsRequest{Pod: p, Node: node, Cpus: cpus, NumaNodes: numa, Devices: devices})
			if err != nil || !resp.GetAdmit() {
				t.Fatalf("Allocate = %v, %v; want admitted", resp, err)
			}
			var got []string
			for _, a := range resp.GetDeviceAffinities() {
				got = append(got, fmt.Sprintf("%s:%v", a.GetContainerName(), a.GetNumaNodes()))
			}
			if strings.Join(got, " ") != tc.want {
				t.Errorf("device affinities %q, want %q", got, tc.want)
			}
		})
	}
}
