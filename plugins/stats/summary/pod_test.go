package summary

import (
	"testing"
	"time"

	"google.golang.org/protobuf/proto"

	hostv1 "github.com/microlet/microlet/proto/microlet/host/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

func webPod() *typesv1.Pod {
	return &typesv1.Pod{Uid: "u1", Namespace: "shop", Name: "web", StartTime: ts(started)}
}

// appRuntime is the runtime's stats of the "app" container, as containerd
// reports them: a rate of its own, available 0 without a limit.
func appRuntime() *hostv1.RuntimeContainerStats {
	return &hostv1.RuntimeContainerStats{
		ContainerId: "c-app",
		Cpu:         &typesv1.CPUStats{Time: ts(t0), UsageCoreNanoSeconds: u(4e9), UsageNanoCores: u(2e8)},
		Memory: &typesv1.MemoryStats{Time: ts(t0), AvailableBytes: u(0), UsageBytes: u(300), WorkingSetBytes: u(250),
			RssBytes: u(100), PageFaults: u(5), MajorPageFaults: u(1)},
		WritableLayer: &typesv1.FsStats{Time: ts(t0.Add(-5 * time.Second)), UsedBytes: u(40), InodesUsed: u(4)},
	}
}

// sidecarRuntime reports no rate and no memory, and a limit.
func sidecarRuntime() *hostv1.RuntimeContainerStats {
	return &hostv1.RuntimeContainerStats{
		ContainerId: "c-side",
		Cpu:         &typesv1.CPUStats{Time: ts(t0), UsageCoreNanoSeconds: u(1e9)},
	}
}

func webSample() PodSample {
	return PodSample{
		Pod: webPod(),
		Cgroup: &CgroupSample{Time: t0, CPUUsageNanos: u(6e9),
			Memory:    &MemorySample{Usage: 800, InactiveFile: 200, RSS: 150, Cache: 180, PageFaults: 9, MajorPageFaults: 3, Limit: u(1000)},
			SwapUsage: u(8), SwapLimit: u(1 << 63), IOPressure: psi(3),
			CFS:    &CFSSample{Periods: 50, ThrottledPeriods: 7},
			DiskIO: []*typesv1.DeviceIOStats{{Device: "/dev/sda", Major: 8, Reads: u(3), ReadBytes: u(12288)}}},
		Containers: []ContainerSample{
			{Name: "app", StartTime: started, Runtime: appRuntime(), Logs: &DiskUsage{Time: t0, Bytes: 8192, Inodes: 2}, Processes: u(3),
				// Its own cgroup's counters: what the runtime's stats lack.
				Counters: &CgroupCounters{Time: t0, Cache: u(64), CFS: &CFSSample{Periods: 40, ThrottledPeriods: 6},
					DiskIO: []*typesv1.DeviceIOStats{{Device: "/dev/sda", Major: 8, Reads: u(2), ReadBytes: u(8192)}}}},
			{Name: "side", StartTime: started.Add(time.Second), Runtime: sidecarRuntime(), Processes: u(1)},
		},
		Network: &NetworkSample{Time: t0, Default: "eth0", Interfaces: []*typesv1.InterfaceStats{
			{Name: "eth0", RxBytes: u(11), TxBytes: u(12), RxErrors: u(0), TxErrors: u(0)},
		}},
		Volumes: []VolumeSample{
			{Name: "shm", Usage: &DiskUsage{Time: t0, Bytes: 4096, Inodes: 1}, Fs: &FsSample{Capacity: 64, Available: 60, Inodes: 10, InodesFree: 9}},
			{Name: "scratch", Ephemeral: true, Usage: &DiskUsage{Time: t0.Add(-30 * time.Second), Bytes: 1000, Inodes: 10}, Fs: nodeFs},
			{Name: "cache", Ephemeral: true}, // not walked yet
		},
		Logs:     &DiskUsage{Time: t0, Bytes: 100, Inodes: 1},
		EtcHosts: &DiskUsage{Time: t0, Bytes: 4096, Inodes: 1},
	}
}

func wantWeb() *typesv1.PodStats {
	imageFsOn := func(f *typesv1.FsStats) *typesv1.FsStats {
		f.AvailableBytes, f.CapacityBytes, f.InodesFree, f.Inodes = u(3000), u(5000), u(200), u(500)
		return f
	}
	return &typesv1.PodStats{
		PodRef:    &typesv1.PodReference{Name: "web", Namespace: "shop", Uid: "u1"},
		StartTime: ts(started),
		Containers: []*typesv1.ContainerStats{
			{
				Name: "app", StartTime: ts(started),
				Cpu: &typesv1.CPUStats{Time: ts(t0), UsageCoreNanoSeconds: u(4e9), UsageNanoCores: u(2e8), CfsPeriods: u(40), CfsThrottledPeriods: u(6)},
				Memory: &typesv1.MemoryStats{Time: ts(t0), UsageBytes: u(300), WorkingSetBytes: u(250),
					RssBytes: u(100), PageFaults: u(5), MajorPageFaults: u(1), CacheBytes: u(64)},
				Io:     &typesv1.IOStats{Time: ts(t0), Devices: []*typesv1.DeviceIOStats{{Device: "/dev/sda", Major: 8, Reads: u(2), ReadBytes: u(8192)}}},
				Rootfs: imageFsOn(&typesv1.FsStats{Time: ts(t0.Add(-5 * time.Second)), UsedBytes: u(40), InodesUsed: u(4)}),
				Logs: &typesv1.FsStats{Time: ts(t0), AvailableBytes: u(600), CapacityBytes: u(1000), UsedBytes: u(8192),
					InodesFree: u(40), Inodes: u(100), InodesUsed: u(2)},
			},
			{
				Name: "side", StartTime: ts(started.Add(time.Second)),
				// The first reading of a runtime without a rate has none.
				Cpu:    &typesv1.CPUStats{Time: ts(t0), UsageCoreNanoSeconds: u(1e9)},
				Memory: &typesv1.MemoryStats{Time: ts(t0), WorkingSetBytes: u(0)},
				// No writable layer reported: the image filesystem alone.
				Rootfs: imageFsOn(&typesv1.FsStats{Time: ts(t0)}),
			},
		},
		Cpu: &typesv1.CPUStats{Time: ts(t0), UsageNanoCores: u(0), UsageCoreNanoSeconds: u(6e9), CfsPeriods: u(50), CfsThrottledPeriods: u(7)},
		Memory: &typesv1.MemoryStats{Time: ts(t0), AvailableBytes: u(400), UsageBytes: u(800), WorkingSetBytes: u(600),
			RssBytes: u(150), CacheBytes: u(180), PageFaults: u(9), MajorPageFaults: u(3)},
		Swap: &typesv1.SwapStats{Time: ts(t0), SwapUsageBytes: u(8)},
		Io: &typesv1.IOStats{Time: ts(t0), Psi: psi(3),
			Devices: []*typesv1.DeviceIOStats{{Device: "/dev/sda", Major: 8, Reads: u(3), ReadBytes: u(12288)}}},
		Network: &typesv1.NetworkStats{Time: ts(t0),
			DefaultInterface: &typesv1.InterfaceStats{Name: "eth0", RxBytes: u(11), TxBytes: u(12), RxErrors: u(0), TxErrors: u(0)},
			Interfaces:       []*typesv1.InterfaceStats{{Name: "eth0", RxBytes: u(11), TxBytes: u(12), RxErrors: u(0), TxErrors: u(0)}},
		},
		VolumeStats: []*typesv1.VolumeStats{
			{Name: "scratch", Fs: &typesv1.FsStats{Time: ts(t0.Add(-30 * time.Second)), AvailableBytes: u(600), CapacityBytes: u(1000),
				UsedBytes: u(1000), Inodes: u(100), InodesFree: u(40), InodesUsed: u(10)}},
			{Name: "shm", Fs: &typesv1.FsStats{Time: ts(t0), AvailableBytes: u(60), CapacityBytes: u(64),
				UsedBytes: u(4096), Inodes: u(10), InodesFree: u(9), InodesUsed: u(1)}},
		},
		// app's rootfs 40 + logs 8192, side's rootfs (nothing known),
		// scratch 1000 (shm is in memory), pod logs 100, etc-hosts 4096.
		EphemeralStorage: &typesv1.FsStats{Time: ts(t0), AvailableBytes: u(600), CapacityBytes: u(1000), InodesFree: u(40), Inodes: u(100),
			UsedBytes: u(40 + 8192 + 1000 + 100 + 4096), InodesUsed: u(4 + 2 + 10 + 1 + 1)},
		ProcessStats: &typesv1.ProcessStats{ProcessCount: u(4)},
	}
}

func TestBuildPod(t *testing.T) {
	cpuAndMemory := func(p *typesv1.PodStats) {
		p.Io, p.Network, p.VolumeStats, p.EphemeralStorage, p.ProcessStats = nil, nil, nil, nil, nil
		for _, c := range p.Containers {
			c.Rootfs, c.Logs, c.Io = nil, nil, nil
			c.Cpu.CfsPeriods, c.Cpu.CfsThrottledPeriods, c.Memory.CacheBytes = nil, nil, nil
		}
	}
	tests := []struct {
		name   string
		only   bool
		change func(*PodSample)
		want   *typesv1.PodStats
	}{
		{"full", false, func(*PodSample) {}, wantWeb()},
		{"only cpu and memory", true, func(*PodSample) {}, with(wantWeb(), cpuAndMemory)},
		{"without its cgroup the pod's cpu and memory are its containers' sum", true, func(p *PodSample) { p.Cgroup = nil },
			with(wantWeb(), func(p *typesv1.PodStats) {
				cpuAndMemory(p)
				p.Swap = nil
				p.Cpu = &typesv1.CPUStats{Time: ts(t0), UsageCoreNanoSeconds: u(5e9), UsageNanoCores: u(2e8)}
				p.Memory = &typesv1.MemoryStats{Time: ts(t0), AvailableBytes: u(0), UsageBytes: u(300), WorkingSetBytes: u(250),
					RssBytes: u(100), PageFaults: u(5), MajorPageFaults: u(1)}
			})},
		{"a container the runtime gave no cpu stats reads 0", true, func(p *PodSample) { p.Containers[1].Runtime.Cpu = nil },
			with(wantWeb(), func(p *typesv1.PodStats) {
				cpuAndMemory(p)
				p.Containers[1].Cpu = &typesv1.CPUStats{Time: ts(t0), UsageCoreNanoSeconds: u(0), UsageNanoCores: u(0)}
			})},
		{"a real available memory is kept", true, func(p *PodSample) { p.Containers[0].Runtime.Memory.AvailableBytes = u(77) },
			with(wantWeb(), func(p *typesv1.PodStats) {
				cpuAndMemory(p)
				p.Containers[0].Memory.AvailableBytes = u(77)
			})},
		{"no network, no process counts, no files measured", false, func(p *PodSample) {
			p.Network, p.Logs, p.EtcHosts, p.Volumes = nil, nil, nil, nil
			p.Containers[0].Processes, p.Containers[1].Processes, p.Containers[0].Logs = nil, nil, nil
		}, with(wantWeb(), func(p *typesv1.PodStats) {
			p.Network, p.ProcessStats, p.VolumeStats, p.Containers[0].Logs = nil, nil, nil, nil
			p.EphemeralStorage.UsedBytes, p.EphemeralStorage.InodesUsed = u(40), u(4)
		})},
		{"a namespace of several interfaces", false, func(p *PodSample) {
			p.Network.Interfaces = []*typesv1.InterfaceStats{{Name: "eth0", RxBytes: u(1)}, {Name: "net1", RxBytes: u(2)}}
		}, with(wantWeb(), func(p *typesv1.PodStats) {
			p.Network.DefaultInterface = &typesv1.InterfaceStats{Name: "eth0", RxBytes: u(1)}
			p.Network.Interfaces = []*typesv1.InterfaceStats{{Name: "eth0", RxBytes: u(1)}, {Name: "net1", RxBytes: u(2)}}
		})},
		{"a namespace without eth0 has no default interface", false, func(p *PodSample) {
			p.Network.Interfaces = []*typesv1.InterfaceStats{{Name: "net1"}}
		}, with(wantWeb(), func(p *typesv1.PodStats) {
			p.Network.DefaultInterface = nil
			p.Network.Interfaces = []*typesv1.InterfaceStats{{Name: "net1"}}
		})},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := webSample()
			tt.change(&p)
			_, pods := Build(Sample{Time: t0, OnlyCPUAndMemory: tt.only, Node: nodeSample(), Pods: []PodSample{p}}, NewCPURates())
			if len(pods) != 1 {
				t.Fatalf("got %d pods, want 1", len(pods))
			}
			assertEqual(t, pods[0], tt.want)
		})
	}
}

func TestBuildPodRates(t *testing.T) {
	rates := NewCPURates()
	p := webSample()
	Build(Sample{Time: t0, Node: nodeSample(), Pods: []PodSample{p}}, rates)

	later := t0.Add(4 * time.Second)
	p = webSample()
	p.Cgroup.Time, p.Cgroup.CPUUsageNanos = later, u(10e9)
	p.Containers[0].Runtime.Cpu = &typesv1.CPUStats{Time: ts(later), UsageCoreNanoSeconds: u(5e9), UsageNanoCores: u(3e8)}
	p.Containers[1].Runtime.Cpu = &typesv1.CPUStats{Time: ts(later), UsageCoreNanoSeconds: u(3e9)}
	_, pods := Build(Sample{Time: later, Node: nodeSample(), Pods: []PodSample{p}}, rates)

	for _, c := range []struct {
		what string
		got  uint64
		want uint64
	}{
		{"pod (from its cgroup)", pods[0].GetCpu().GetUsageNanoCores(), 1e9},
		{"app (the runtime's own rate)", pods[0].GetContainers()[0].GetCpu().GetUsageNanoCores(), 3e8},
		{"side (measured between readings)", pods[0].GetContainers()[1].GetCpu().GetUsageNanoCores(), 5e8},
	} {
		if c.got != c.want {
			t.Errorf("%s: usage_nano_cores = %d, want %d", c.what, c.got, c.want)
		}
	}
}

func TestBuildKeepsPodOrder(t *testing.T) {
	var pods []PodSample
	for _, name := range []string{"c", "a", "b"} {
		p := webSample()
		p.Pod = proto.Clone(p.Pod).(*typesv1.Pod)
		p.Pod.Name, p.Pod.Uid = name, "uid-"+name
		pods = append(pods, p)
	}
	_, got := Build(Sample{Time: t0, Node: nodeSample(), Pods: pods}, NewCPURates())
	var names []string
	for _, p := range got {
		names = append(names, p.GetPodRef().GetName())
	}
	if len(names) != 3 || names[0] != "c" || names[1] != "a" || names[2] != "b" {
		t.Errorf("pods in order %v, want the sample's [c a b]", names)
	}
}
