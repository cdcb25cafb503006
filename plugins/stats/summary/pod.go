package summary

import (
	"google.golang.org/protobuf/proto"

	hostv1 "github.com/microlet/microlet/proto/microlet/host/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// buildPod is the kubelet's CRI stats provider's PodStats: containers from
// the runtime's stats, the pod's cpu, memory and network as cadvisor reads
// them (its cgroup, the sum of its containers' when the cgroup could not
// be read; its network namespace), and the pod's disk usage.
func buildPod(s Sample, p PodSample, rates *CPURates) *typesv1.PodStats {
	pod := p.Pod
	out := &typesv1.PodStats{
		PodRef:    &typesv1.PodReference{Name: pod.GetName(), Namespace: pod.GetNamespace(), Uid: pod.GetUid()},
		StartTime: pod.GetStartTime(),
	}
	for _, c := range p.Containers {
		out.Containers = append(out.Containers, buildContainer(s, c, rates))
	}
	if cg := p.Cgroup; cg != nil {
		var limit *uint64
		if cg.Memory != nil {
			limit = cg.Memory.Limit
		}
		out.Cpu = cgroupCPU(*cg, "pod/"+pod.GetUid(), rates)
		out.Memory = cgroupMemory(*cg, limit)
		out.Swap = cgroupSwap(*cg)
	} else {
		out.Cpu, out.Memory = sumOfContainers(out.Containers)
	}
	if s.OnlyCPUAndMemory {
		return out
	}
	if cg := p.Cgroup; cg != nil {
		out.Io = cgroupIO(*cg)
	}
	if p.Network != nil {
		out.Network = network(p.Network)
	}
	out.ProcessStats = processes(p.Containers)
	out.VolumeStats = volumes(p)
	out.EphemeralStorage = ephemeralStorage(p, out.Containers, s.Node.Fs)
	return out
}

// buildContainer is the kubelet's makeContainerStats: cpu, memory and the
// writable layer as the runtime reports them, the writable layer on the
// image filesystem, and the container's log files on the node's.
func buildContainer(s Sample, c ContainerSample, rates *CPURates) *typesv1.ContainerStats {
	rt := c.Runtime
	out := &typesv1.ContainerStats{
		Name:      c.Name,
		StartTime: timestamp(c.StartTime),
		Cpu:       containerCPU(s, rt, rates),
		Memory:    containerMemory(s, rt),
	}
	if s.OnlyCPUAndMemory {
		return out
	}
	var imageFs *FsSample
	if s.Node.ImageFs != nil {
		imageFs = s.Node.ImageFs.Fs
	}
	out.Rootfs = on(imageFs)
	if layer := rt.GetWritableLayer(); layer != nil {
		out.Rootfs.Time = layer.Time
		out.Rootfs.UsedBytes = copyOf(layer.UsedBytes)
		out.Rootfs.InodesUsed = copyOf(layer.InodesUsed)
	}
	if c.Logs != nil {
		out.Logs = filesOn(s.Node.Fs, c.Logs)
	}
	if c.Counters != nil {
		addCounters(out, *c.Counters)
	}
	return out
}

// addCounters adds to a container's stats what its cgroup counts and the
// runtime's stats do not: the page cache, CFS periods, block I/O.
func addCounters(out *typesv1.ContainerStats, c CgroupCounters) {
	setCFS(out.Cpu, c.CFS)
	out.Memory.CacheBytes = copyOf(c.Cache)
	if len(c.DiskIO) > 0 {
		out.Io = &typesv1.IOStats{Time: timestamp(c.Time), Devices: c.DiskIO}
	}
}

// containerCPU is the runtime's cpu stats. When the runtime gives no rate,
// it is measured between this reading and the previous one; when it gives
// no cpu stats at all, both counters read 0, as the kubelet reports them.
func containerCPU(s Sample, rt *hostv1.RuntimeContainerStats, rates *CPURates) *typesv1.CPUStats {
	cpu := rt.GetCpu()
	if cpu == nil {
		return &typesv1.CPUStats{Time: timestamp(s.Time), UsageCoreNanoSeconds: ptr(uint64(0)), UsageNanoCores: ptr(uint64(0))}
	}
	out := proto.Clone(cpu).(*typesv1.CPUStats)
	out.Time = orTime(cpu.Time, s.Time)
	if out.UsageNanoCores == nil && out.UsageCoreNanoSeconds != nil {
		out.UsageNanoCores = rates.Rate("container/"+rt.GetContainerId(), out.Time.AsTime(), *out.UsageCoreNanoSeconds)
	}
	return out
}

// containerMemory is the runtime's memory stats. containerd reports
// available 0 for a container without a memory limit; that is left out,
// as cadvisor leaves out available memory without a limit.
func containerMemory(s Sample, rt *hostv1.RuntimeContainerStats) *typesv1.MemoryStats {
	memory := rt.GetMemory()
	if memory == nil {
		return &typesv1.MemoryStats{Time: timestamp(s.Time), WorkingSetBytes: ptr(uint64(0))}
	}
	out := proto.Clone(memory).(*typesv1.MemoryStats)
	out.Time = orTime(memory.Time, s.Time)
	if out.GetAvailableBytes() == 0 {
		out.AvailableBytes = nil
	}
	return out
}

// sumOfContainers is the pod's cpu and memory as the sum of its
// containers' (the kubelet's addPodCPUMemoryStats without a pod cgroup).
func sumOfContainers(containers []*typesv1.ContainerStats) (*typesv1.CPUStats, *typesv1.MemoryStats) {
	var cpu *typesv1.CPUStats
	var memory *typesv1.MemoryStats
	for _, c := range containers {
		if cc := c.GetCpu(); cc != nil {
			if cpu == nil {
				cpu = &typesv1.CPUStats{}
			}
			cpu.Time = cc.Time
			cpu.UsageCoreNanoSeconds = ptr(cpu.GetUsageCoreNanoSeconds() + cc.GetUsageCoreNanoSeconds())
			cpu.UsageNanoCores = ptr(cpu.GetUsageNanoCores() + cc.GetUsageNanoCores())
		}
		if cm := c.GetMemory(); cm != nil {
			if memory == nil {
				memory = &typesv1.MemoryStats{}
			}
			memory.Time = cm.Time
			memory.AvailableBytes = ptr(memory.GetAvailableBytes() + cm.GetAvailableBytes())
			memory.UsageBytes = ptr(memory.GetUsageBytes() + cm.GetUsageBytes())
			memory.WorkingSetBytes = ptr(memory.GetWorkingSetBytes() + cm.GetWorkingSetBytes())
			memory.RssBytes = ptr(memory.GetRssBytes() + cm.GetRssBytes())
			memory.PageFaults = ptr(memory.GetPageFaults() + cm.GetPageFaults())
			memory.MajorPageFaults = ptr(memory.GetMajorPageFaults() + cm.GetMajorPageFaults())
		}
	}
	return cpu, memory
}

// processes is the sum of the containers' process counts (the kubelet's
// mergeProcessStats); nil when none was counted.
func processes(containers []ContainerSample) *typesv1.ProcessStats {
	var total *uint64
	for _, c := range containers {
		total = sum(total, c.Processes)
	}
	if total == nil {
		return nil
	}
	return &typesv1.ProcessStats{ProcessCount: total}
}
