package summary

import (
	"testing"
	"time"

	"google.golang.org/protobuf/encoding/prototext"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/types/known/timestamppb"

	hostv1 "github.com/microlet/microlet/proto/microlet/host/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

var (
	t0      = time.Date(2026, 3, 4, 5, 6, 7, 0, time.UTC)
	boot    = time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	started = time.Date(2026, 3, 4, 5, 0, 0, 0, time.UTC)
)

func u(v uint64) *uint64 { return &v }
func i(v int64) *int64   { return &v }
func ts(t time.Time) *timestamppb.Timestamp {
	return timestamppb.New(t)
}

// nodeFs is the agent's root filesystem in every sample.
var nodeFs = &FsSample{Time: t0, Capacity: 1000, Available: 600, Used: 350, Inodes: 100, InodesFree: 40}

// imageFs is the runtime's image filesystem's statfs.
var imageFs = &FsSample{Time: t0, Capacity: 5000, Available: 3000, Used: 1900, Inodes: 500, InodesFree: 200}

func psi(total uint64) *typesv1.PSIStats {
	return &typesv1.PSIStats{Some: &typesv1.PSIData{Total: total, Avg10: 1.5}, Full: &typesv1.PSIData{Total: total / 2}}
}

func nodeSample() NodeSample {
	return NodeSample{
		Name:     "node-a",
		BootTime: boot,
		Root: CgroupSample{
			Time:          t0,
			CPUUsageNanos: u(7e9),
			Memory:        &MemorySample{Usage: 900, InactiveFile: 300, RSS: 400, Cache: 350, PageFaults: 10, MajorPageFaults: 2, Limit: u(1 << 63)},
			CPUPressure:   psi(10), MemoryPressure: psi(20), IOPressure: psi(30),
			DiskIO: []*typesv1.DeviceIOStats{{Device: "/dev/vda", Major: 254, Reads: u(5), ReadBytes: u(20480), Writes: u(2), WriteBytes: u(8192)}},
		},
		MemoryCapacity: 2000,
		SwapTotal:      u(500), SwapFree: u(450),
		Pods: &PodsCgroupSample{Created: boot, Cgroup: CgroupSample{
			Time: t0, CPUUsageNanos: u(3e9),
			Memory: &MemorySample{Usage: 500, InactiveFile: 100, Limit: u(1500)},
		}},
		Fs:      nodeFs,
		ImageFs: &RuntimeFsSample{Usage: &hostv1.FilesystemUsage{Timestamp: ts(t0.Add(-time.Second)), Mountpoint: "/var/lib/containerd", UsedBytes: u(1200), InodesUsed: u(90)}, Fs: imageFs},
		Rlimit:  &RlimitSample{Time: t0, MaxPID: i(32768), Tasks: i(321)},
		Network: &NetworkSample{Time: t0, Default: "eth1", Interfaces: []*typesv1.InterfaceStats{
			{Name: "eth0", RxBytes: u(1)}, {Name: "eth1", RxBytes: u(2), TxBytes: u(3), RxErrors: u(0), TxErrors: u(0)},
		}},
	}
}

func TestBuildNode(t *testing.T) {
	wantFull := &typesv1.NodeStats{
		NodeName:  "node-a",
		StartTime: ts(boot),
		Cpu:       &typesv1.CPUStats{Time: ts(t0), UsageNanoCores: u(0), UsageCoreNanoSeconds: u(7e9), Psi: psi(10)},
		// Available is measured against capacity, not the root's limit.
		Memory: &typesv1.MemoryStats{Time: ts(t0), AvailableBytes: u(1400), UsageBytes: u(900), WorkingSetBytes: u(600),
			RssBytes: u(400), CacheBytes: u(350), PageFaults: u(10), MajorPageFaults: u(2), Psi: psi(20)},
		Io: &typesv1.IOStats{Time: ts(t0), Psi: psi(30),
			Devices: []*typesv1.DeviceIOStats{{Device: "/dev/vda", Major: 254, Reads: u(5), ReadBytes: u(20480), Writes: u(2), WriteBytes: u(8192)}}},
		Swap: &typesv1.SwapStats{Time: ts(t0), SwapUsageBytes: u(50), SwapAvailableBytes: u(450)},
		SystemContainers: []*typesv1.ContainerStats{{
			Name: "pods", StartTime: ts(boot),
			Cpu:    &typesv1.CPUStats{Time: ts(t0), UsageNanoCores: u(0), UsageCoreNanoSeconds: u(3e9)},
			Memory: &typesv1.MemoryStats{Time: ts(t0), AvailableBytes: u(1100), UsageBytes: u(500), WorkingSetBytes: u(400), RssBytes: u(0), CacheBytes: u(0), PageFaults: u(0), MajorPageFaults: u(0)},
		}},
		Fs: &typesv1.FsStats{Time: ts(t0), AvailableBytes: u(600), CapacityBytes: u(1000), UsedBytes: u(350), InodesFree: u(40), Inodes: u(100), InodesUsed: u(60)},
		Runtime: &typesv1.RuntimeStats{
			ImageFs:     &typesv1.FsStats{Time: ts(t0.Add(-time.Second)), AvailableBytes: u(3000), CapacityBytes: u(5000), UsedBytes: u(1200), InodesFree: u(200), Inodes: u(500), InodesUsed: u(90)},
			ContainerFs: &typesv1.FsStats{Time: ts(t0.Add(-time.Second)), AvailableBytes: u(3000), CapacityBytes: u(5000), UsedBytes: u(1200), InodesFree: u(200), Inodes: u(500), InodesUsed: u(90)},
		},
		Rlimit: &typesv1.RlimitStats{Time: ts(t0), MaxPid: i(32768), NumOfRunningProcesses: i(321)},
		Network: &typesv1.NetworkStats{Time: ts(t0),
			DefaultInterface: &typesv1.InterfaceStats{Name: "eth1", RxBytes: u(2), TxBytes: u(3), RxErrors: u(0), TxErrors: u(0)},
			Interfaces: []*typesv1.InterfaceStats{
				{Name: "eth0", RxBytes: u(1)}, {Name: "eth1", RxBytes: u(2), TxBytes: u(3), RxErrors: u(0), TxErrors: u(0)},
			}},
	}
	cpuAndMemory := proto.Clone(wantFull).(*typesv1.NodeStats)
	cpuAndMemory.Io, cpuAndMemory.Fs, cpuAndMemory.Runtime, cpuAndMemory.Rlimit, cpuAndMemory.Network = nil, nil, nil, nil, nil

	tests := []struct {
		name   string
		sample func() Sample
		want   *typesv1.NodeStats
	}{
		{"full", func() Sample { return Sample{Time: t0, Node: nodeSample()} }, wantFull},
		{"only cpu and memory leaves io, filesystems, rlimit and network out", func() Sample {
			return Sample{Time: t0, OnlyCPUAndMemory: true, Node: nodeSample()}
		}, cpuAndMemory},
		{"a container filesystem of its own", func() Sample {
			n := nodeSample()
			n.ContainerFs = &RuntimeFsSample{Usage: &hostv1.FilesystemUsage{Timestamp: ts(t0), UsedBytes: u(7)}}
			return Sample{Time: t0, Node: n}
		}, with(wantFull, func(n *typesv1.NodeStats) {
			// Unmeasurable mount point: only what the runtime said.
			n.Runtime.ContainerFs = &typesv1.FsStats{Time: ts(t0), UsedBytes: u(7)}
		})},
		{"the filesystems' reads and writes on devices the root cgroup's counters leave out", func() Sample {
			n := nodeSample()
			n.FilesystemIO = []*typesv1.DeviceIOStats{
				{Device: "/dev/vda", Major: 254, Reads: u(99), Writes: u(98)}, // counted by the cgroup already
				{Device: "/dev/sda1", Major: 8, Minor: 1, Reads: u(7), Writes: u(6)},
			}
			return Sample{Time: t0, Node: n}
		}, with(wantFull, func(n *typesv1.NodeStats) {
			n.Io.Devices = append(n.Io.Devices, &typesv1.DeviceIOStats{Device: "/dev/sda1", Major: 8, Minor: 1, Reads: u(7), Writes: u(6)})
		})},
		{"pressure but no block I/O counted", func() Sample {
			n := nodeSample()
			n.Root.DiskIO = nil
			return Sample{Time: t0, Node: n}
		}, with(wantFull, func(n *typesv1.NodeStats) { n.Io.Devices = nil })},
		{"block I/O but no pressure (cgroup v1)", func() Sample {
			n := nodeSample()
			n.Root.IOPressure = nil
			return Sample{Time: t0, Node: n}
		}, with(wantFull, func(n *typesv1.NodeStats) { n.Io.Psi = nil })},
		{"no pods cgroup, no swap, no pressure, no block I/O, no limits known", func() Sample {
			n := nodeSample()
			n.Pods, n.SwapTotal = nil, nil
			n.Root.CPUPressure, n.Root.MemoryPressure, n.Root.IOPressure, n.Root.DiskIO = nil, nil, nil, nil
			n.Rlimit = &RlimitSample{Time: t0}
			n.Network.Default = ""
			return Sample{Time: t0, Node: n}
		}, with(wantFull, func(n *typesv1.NodeStats) {
			n.SystemContainers, n.Swap, n.Io = nil, nil, nil
			n.Cpu.Psi, n.Memory.Psi = nil, nil
			n.Rlimit = &typesv1.RlimitStats{Time: ts(t0)}
			n.Network.DefaultInterface = nil
		})},
		{"usage below inactive file gives a working set of 0", func() Sample {
			n := nodeSample()
			n.Root.Memory.Usage = 100
			return Sample{Time: t0, Node: n}
		}, with(wantFull, func(n *typesv1.NodeStats) {
			n.Memory.UsageBytes, n.Memory.WorkingSetBytes, n.Memory.AvailableBytes = u(100), u(0), u(2000)
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node, pods := Build(tt.sample(), NewCPURates())
			if len(pods) != 0 {
				t.Errorf("pods = %v, want none", pods)
			}
			assertEqual(t, node, tt.want)
		})
	}
}

func TestBuildNodeRates(t *testing.T) {
	rates := NewCPURates()
	s := Sample{Time: t0, Node: nodeSample()}
	Build(s, rates)
	s.Time = t0.Add(10 * time.Second)
	s.Node.Root.Time, s.Node.Root.CPUUsageNanos = s.Time, u(27e9)
	s.Node.Pods.Cgroup.Time, s.Node.Pods.Cgroup.CPUUsageNanos = s.Time, u(8e9)
	node, _ := Build(s, rates)
	if got := node.GetCpu().GetUsageNanoCores(); got != 2e9 {
		t.Errorf("node usage_nano_cores = %d, want 2e9 (20 cpu-seconds in 10s)", got)
	}
	if got := node.GetSystemContainers()[0].GetCpu().GetUsageNanoCores(); got != 5e8 {
		t.Errorf("pods usage_nano_cores = %d, want 5e8 (5 cpu-seconds in 10s)", got)
	}
}

func with[M proto.Message](m M, change func(M)) M {
	c := proto.Clone(m).(M)
	change(c)
	return c
}

func assertEqual[M proto.Message](t *testing.T, got, want M) {
	t.Helper()
	if !proto.Equal(got, want) {
		t.Errorf("got:\n%s\nwant:\n%s", prototext.Format(got), prototext.Format(want))
	}
}
