package summary

import (
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// systemContainerPods names the system container of the cgroup that holds
// every pod (v1alpha1.SystemContainerPods).
const systemContainerPods = "pods"

// Keys of CPURates for the node's own cgroups.
const (
	nodeRateKey = "node"
	podsRateKey = "system-container/pods"
)

// Build assembles the node's and the pods' stats from s. rates keeps cpu
// counters from one call to the next.
func Build(s Sample, rates *CPURates) (*typesv1.NodeStats, []*typesv1.PodStats) {
	node := buildNode(s, rates)
	pods := make([]*typesv1.PodStats, 0, len(s.Pods))
	for _, p := range s.Pods {
		pods = append(pods, buildPod(s, p, rates))
	}
	rates.Prune(s.Time)
	return node, pods
}

// buildNode is the kubelet's summary provider's NodeStats: the root
// cgroup's cpu and memory, memory available against capacity, swap, and
// the "pods" system container; with io pressure, the filesystems, rlimit
// and network unless only cpu and memory were asked for.
func buildNode(s Sample, rates *CPURates) *typesv1.NodeStats {
	n := s.Node
	out := &typesv1.NodeStats{
		NodeName:  n.Name,
		StartTime: timestamp(n.BootTime),
		Cpu:       cgroupCPU(n.Root, nodeRateKey, rates),
		Memory:    cgroupMemory(n.Root, &n.MemoryCapacity),
		Swap:      nodeSwap(s),
	}
	if n.Pods != nil {
		out.SystemContainers = []*typesv1.ContainerStats{podsContainer(s, n.Pods, rates)}
	}
	if s.OnlyCPUAndMemory {
		return out
	}
	out.Io = nodeIO(n)
	if n.Fs != nil {
		out.Fs = filesystem(n.Fs)
	}
	if n.ImageFs != nil {
		out.Runtime = &typesv1.RuntimeStats{ImageFs: runtimeFs(n.ImageFs), ContainerFs: runtimeFs(n.ImageFs)}
		if n.ContainerFs != nil {
			out.Runtime.ContainerFs = runtimeFs(n.ContainerFs)
		}
	}
	if r := n.Rlimit; r != nil {
		out.Rlimit = &typesv1.RlimitStats{Time: timestamp(r.Time), MaxPid: copyOf64(r.MaxPID), NumOfRunningProcesses: copyOf64(r.Tasks)}
	}
	if n.Network != nil {
		out.Network = network(n.Network)
	}
	return out
}

// nodeIO is the root cgroup's IOStats with the node's filesystems' reads
// and writes on the devices its block I/O counters left out: cAdvisor's
// root container lists both, and one series per device keeps the families
// free of duplicates.
func nodeIO(n NodeSample) *typesv1.IOStats {
	root := n.Root
	counted := map[[2]uint32]bool{}
	for _, d := range root.DiskIO {
		counted[[2]uint32{d.GetMajor(), d.GetMinor()}] = true
	}
	for _, d := range n.FilesystemIO {
		if !counted[[2]uint32{d.GetMajor(), d.GetMinor()}] {
			root.DiskIO = append(root.DiskIO[:len(root.DiskIO):len(root.DiskIO)], d)
		}
	}
	return cgroupIO(root)
}

// nodeSwap is the node's swap from /proc/meminfo: used is total - free,
// and all that is free is available.
func nodeSwap(s Sample) *typesv1.SwapStats {
	n := s.Node
	if n.SwapTotal == nil || n.SwapFree == nil {
		return nil
	}
	return &typesv1.SwapStats{
		Time:               timestamp(n.Root.Time),
		SwapUsageBytes:     ptr(saturatingSub(*n.SwapTotal, *n.SwapFree)),
		SwapAvailableBytes: ptr(*n.SwapFree),
	}
}

// podsContainer is the "pods" system container. System containers have no
// filesystems.
func podsContainer(s Sample, p *PodsCgroupSample, rates *CPURates) *typesv1.ContainerStats {
	c := p.Cgroup
	var limit *uint64
	if c.Memory != nil {
		limit = c.Memory.Limit
	}
	out := &typesv1.ContainerStats{
		Name:      systemContainerPods,
		StartTime: timestamp(p.Created),
		Cpu:       cgroupCPU(c, podsRateKey, rates),
		Memory:    cgroupMemory(c, limit),
		Swap:      cgroupSwap(c),
	}
	if !s.OnlyCPUAndMemory {
		out.Io = cgroupIO(c)
	}
	return out
}

// network lists a namespace's interfaces, with its default one also as
// the default interface, as cadvisor's list includes it.
func network(n *NetworkSample) *typesv1.NetworkStats {
	out := &typesv1.NetworkStats{Time: timestamp(n.Time), Interfaces: n.Interfaces}
	for _, i := range n.Interfaces {
		if i.GetName() == n.Default {
			out.DefaultInterface = i
		}
	}
	return out
}

func copyOf64(v *int64) *int64 {
	if v == nil {
		return nil
	}
	c := *v
	return &c
}
