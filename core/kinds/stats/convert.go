package stats

import (
	"google.golang.org/protobuf/types/known/timestamppb"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// The conversion is field for field: microlet.types.v1 mirrors v1alpha1,
// and what the plugin left unset stays nil (or the zero value where
// v1alpha1 has no pointer), so the JSON leaves out what upstream leaves
// out. Nothing in the result points into the plugin's messages.

func toSummary(s *Sample) *statsapi.Summary {
	out := &statsapi.Summary{Node: nodeStats(s.Node), Pods: make([]statsapi.PodStats, 0, len(s.Pods))}
	for _, p := range s.Pods {
		out.Pods = append(out.Pods, podStats(p))
	}
	return out
}

func nodeStats(n *typesv1.NodeStats) statsapi.NodeStats {
	return statsapi.NodeStats{
		NodeName:         n.GetNodeName(),
		SystemContainers: containers(n.GetSystemContainers()),
		StartTime:        metaTime(n.GetStartTime()),
		CPU:              cpuStats(n.GetCpu()),
		Memory:           memoryStats(n.GetMemory()),
		IO:               ioStats(n.GetIo()),
		Network:          networkStats(n.GetNetwork()),
		Fs:               fsStats(n.GetFs()),
		Runtime:          runtimeStats(n.GetRuntime()),
		Rlimit:           rlimitStats(n.GetRlimit()),
		Swap:             swapStats(n.GetSwap()),
	}
}

func podStats(p *typesv1.PodStats) statsapi.PodStats {
	ref := p.GetPodRef()
	out := statsapi.PodStats{
		PodRef:           statsapi.PodReference{Name: ref.GetName(), Namespace: ref.GetNamespace(), UID: ref.GetUid()},
		StartTime:        metaTime(p.GetStartTime()),
		Containers:       containers(p.GetContainers()),
		CPU:              cpuStats(p.GetCpu()),
		Memory:           memoryStats(p.GetMemory()),
		IO:               ioStats(p.GetIo()),
		Network:          networkStats(p.GetNetwork()),
		EphemeralStorage: fsStats(p.GetEphemeralStorage()),
		ProcessStats:     processStats(p.GetProcessStats()),
		Swap:             swapStats(p.GetSwap()),
	}
	for _, v := range p.GetVolumeStats() {
		out.VolumeStats = append(out.VolumeStats, volumeStats(v))
	}
	return out
}

func containers(in []*typesv1.ContainerStats) []statsapi.ContainerStats {
	if len(in) == 0 {
		return nil
	}
	out := make([]statsapi.ContainerStats, 0, len(in))
	for _, c := range in {
		out = append(out, containerStats(c))
	}
	return out
}

func containerStats(c *typesv1.ContainerStats) statsapi.ContainerStats {
	out := statsapi.ContainerStats{
		Name:      c.GetName(),
		StartTime: metaTime(c.GetStartTime()),
		CPU:       cpuStats(c.GetCpu()),
		Memory:    memoryStats(c.GetMemory()),
		IO:        ioStats(c.GetIo()),
		Rootfs:    fsStats(c.GetRootfs()),
		Logs:      fsStats(c.GetLogs()),
		Swap:      swapStats(c.GetSwap()),
	}
	for _, a := range c.GetAccelerators() {
		out.Accelerators = append(out.Accelerators, statsapi.AcceleratorStats{
			Make:        a.GetMake(),
			Model:       a.GetModel(),
			ID:          a.GetId(),
			MemoryTotal: a.GetMemoryTotal(),
			MemoryUsed:  a.GetMemoryUsed(),
			DutyCycle:   a.GetDutyCycle(),
		})
	}
	return out
}

func cpuStats(c *typesv1.CPUStats) *statsapi.CPUStats {
	if c == nil {
		return nil
	}
	return &statsapi.CPUStats{
		Time:                 metaTime(c.GetTime()),
		UsageNanoCores:       copyOf(c.UsageNanoCores),
		UsageCoreNanoSeconds: copyOf(c.UsageCoreNanoSeconds),
		PSI:                  psiStats(c.GetPsi()),
	}
}

func memoryStats(m *typesv1.MemoryStats) *statsapi.MemoryStats {
	if m == nil {
		return nil
	}
	return &statsapi.MemoryStats{
		Time:            metaTime(m.GetTime()),
		AvailableBytes:  copyOf(m.AvailableBytes),
		UsageBytes:      copyOf(m.UsageBytes),
		WorkingSetBytes: copyOf(m.WorkingSetBytes),
		RSSBytes:        copyOf(m.RssBytes),
		PageFaults:      copyOf(m.PageFaults),
		MajorPageFaults: copyOf(m.MajorPageFaults),
		PSI:             psiStats(m.GetPsi()),
	}
}

// ioStats is v1alpha1's IOStats: pressure alone, so nil without it (the
// plugin's per-device counters are cAdvisor's, for /metrics/cadvisor).
func ioStats(i *typesv1.IOStats) *statsapi.IOStats {
	if i.GetPsi() == nil {
		return nil
	}
	return &statsapi.IOStats{Time: metaTime(i.GetTime()), PSI: psiStats(i.GetPsi())}
}

func psiStats(p *typesv1.PSIStats) *statsapi.PSIStats {
	if p == nil {
		return nil
	}
	return &statsapi.PSIStats{Full: psiData(p.GetFull()), Some: psiData(p.GetSome())}
}

func psiData(d *typesv1.PSIData) statsapi.PSIData {
	return statsapi.PSIData{Total: d.GetTotal(), Avg10: d.GetAvg10(), Avg60: d.GetAvg60(), Avg300: d.GetAvg300()}
}

func swapStats(s *typesv1.SwapStats) *statsapi.SwapStats {
	if s == nil {
		return nil
	}
	return &statsapi.SwapStats{
		Time:               metaTime(s.GetTime()),
		SwapAvailableBytes: copyOf(s.SwapAvailableBytes),
		SwapUsageBytes:     copyOf(s.SwapUsageBytes),
	}
}

func fsStats(f *typesv1.FsStats) *statsapi.FsStats {
	if f == nil {
		return nil
	}
	out := fsValue(f)
	return &out
}

// fsValue is for v1alpha1's inlined FsStats (VolumeStats): a missing one
// is the zero value.
func fsValue(f *typesv1.FsStats) statsapi.FsStats {
	if f == nil {
		return statsapi.FsStats{}
	}
	return statsapi.FsStats{
		Time:           metaTime(f.GetTime()),
		AvailableBytes: copyOf(f.AvailableBytes),
		CapacityBytes:  copyOf(f.CapacityBytes),
		UsedBytes:      copyOf(f.UsedBytes),
		InodesFree:     copyOf(f.InodesFree),
		Inodes:         copyOf(f.Inodes),
		InodesUsed:     copyOf(f.InodesUsed),
	}
}

// networkStats inlines the default interface, as v1alpha1 does; without
// one its fields are empty.
func networkStats(n *typesv1.NetworkStats) *statsapi.NetworkStats {
	if n == nil {
		return nil
	}
	out := &statsapi.NetworkStats{Time: metaTime(n.GetTime()), InterfaceStats: interfaceStats(n.GetDefaultInterface())}
	for _, i := range n.GetInterfaces() {
		out.Interfaces = append(out.Interfaces, interfaceStats(i))
	}
	return out
}

func interfaceStats(i *typesv1.InterfaceStats) statsapi.InterfaceStats {
	if i == nil {
		return statsapi.InterfaceStats{}
	}
	return statsapi.InterfaceStats{
		Name:     i.GetName(),
		RxBytes:  copyOf(i.RxBytes),
		RxErrors: copyOf(i.RxErrors),
		TxBytes:  copyOf(i.TxBytes),
		TxErrors: copyOf(i.TxErrors),
	}
}

func runtimeStats(r *typesv1.RuntimeStats) *statsapi.RuntimeStats {
	if r == nil {
		return nil
	}
	return &statsapi.RuntimeStats{ImageFs: fsStats(r.GetImageFs()), ContainerFs: fsStats(r.GetContainerFs())}
}

func rlimitStats(r *typesv1.RlimitStats) *statsapi.RlimitStats {
	if r == nil {
		return nil
	}
	return &statsapi.RlimitStats{
		Time:                  metaTime(r.GetTime()),
		MaxPID:                copyOf(r.MaxPid),
		NumOfRunningProcesses: copyOf(r.NumOfRunningProcesses),
	}
}

func volumeStats(v *typesv1.VolumeStats) statsapi.VolumeStats {
	out := statsapi.VolumeStats{FsStats: fsValue(v.GetFs()), Name: v.GetName()}
	if ref := v.GetPvcRef(); ref != nil {
		out.PVCRef = &statsapi.PVCReference{Name: ref.GetName(), Namespace: ref.GetNamespace()}
	}
	return out
}

func processStats(p *typesv1.ProcessStats) *statsapi.ProcessStats {
	if p == nil {
		return nil
	}
	return &statsapi.ProcessStats{ProcessCount: copyOf(p.ProcessCount)}
}

// metaTime converts a timestamp; unset is the zero time (JSON null).
func metaTime(t *timestamppb.Timestamp) metav1.Time {
	if t == nil {
		return metav1.Time{}
	}
	return metav1.NewTime(t.AsTime())
}

func copyOf[T any](v *T) *T {
	if v == nil {
		return nil
	}
	c := *v
	return &c
}

// onlyCPUAndMemory keeps what the kubelet's GetCPUAndMemoryStats reports:
// names, start times, cpu, memory and swap of the node, its system
// containers, the pods and their containers. The plugin was asked for no
// more; this holds the shape whatever a plugin sends.
func onlyCPUAndMemory(s *statsapi.Summary) {
	n := s.Node
	s.Node = statsapi.NodeStats{NodeName: n.NodeName, SystemContainers: containersCPUAndMemory(n.SystemContainers),
		StartTime: n.StartTime, CPU: n.CPU, Memory: n.Memory, Swap: n.Swap}
	for i, p := range s.Pods {
		s.Pods[i] = statsapi.PodStats{PodRef: p.PodRef, StartTime: p.StartTime, Containers: containersCPUAndMemory(p.Containers),
			CPU: p.CPU, Memory: p.Memory, Swap: p.Swap}
	}
}

func containersCPUAndMemory(cs []statsapi.ContainerStats) []statsapi.ContainerStats {
	for i, c := range cs {
		cs[i] = statsapi.ContainerStats{Name: c.Name, StartTime: c.StartTime, CPU: c.CPU, Memory: c.Memory, Swap: c.Swap}
	}
	return cs
}
