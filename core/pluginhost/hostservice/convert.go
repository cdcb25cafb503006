package hostservice

import (
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubelettypes "k8s.io/kubelet/pkg/types"

	hostv1 "github.com/microlet/microlet/proto/microlet/host/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

func containerStats(st *runtimeapi.ContainerStats) *hostv1.RuntimeContainerStats {
	attrs := st.GetAttributes()
	labels := attrs.GetLabels()
	return &hostv1.RuntimeContainerStats{
		ContainerId:   attrs.GetId(),
		PodUid:        kubelettypes.GetPodUID(labels),
		PodNamespace:  kubelettypes.GetPodNamespace(labels),
		PodName:       kubelettypes.GetPodName(labels),
		ContainerName: kubelettypes.GetContainerName(labels),
		Cpu:           cpuStats(st.GetCpu()),
		Memory:        memoryStats(st.GetMemory()),
		WritableLayer: fsStats(st.GetWritableLayer()),
	}
}

func sandboxStats(st *runtimeapi.PodSandboxStats) *hostv1.RuntimePodSandboxStats {
	attrs := st.GetAttributes()
	meta := attrs.GetMetadata()
	linux := st.GetLinux()
	out := &hostv1.RuntimePodSandboxStats{
		SandboxId:    attrs.GetId(),
		PodUid:       meta.GetUid(),
		PodNamespace: meta.GetNamespace(),
		PodName:      meta.GetName(),
		Cpu:          cpuStats(linux.GetCpu()),
		Memory:       memoryStats(linux.GetMemory()),
		Network:      networkStats(linux.GetNetwork()),
	}
	if p := linux.GetProcess(); p != nil && p.GetProcessCount() != nil {
		count := p.GetProcessCount().GetValue()
		out.Process = &typesv1.ProcessStats{ProcessCount: &count}
	}
	return out
}

// timestamp converts CRI's nanoseconds since the epoch; 0 stays unset.
func timestamp(nanos int64) *timestamppb.Timestamp {
	if nanos == 0 {
		return nil
	}
	return timestamppb.New(time.Unix(0, nanos))
}

// value unwraps a CRI UInt64Value; nil stays unset.
func value(v *runtimeapi.UInt64Value) *uint64 {
	if v == nil {
		return nil
	}
	x := v.GetValue()
	return &x
}

func cpuStats(c *runtimeapi.CpuUsage) *typesv1.CPUStats {
	if c == nil {
		return nil
	}
	return &typesv1.CPUStats{
		Time:                 timestamp(c.GetTimestamp()),
		UsageNanoCores:       value(c.GetUsageNanoCores()),
		UsageCoreNanoSeconds: value(c.GetUsageCoreNanoSeconds()),
	}
}

func memoryStats(m *runtimeapi.MemoryUsage) *typesv1.MemoryStats {
	if m == nil {
		return nil
	}
	return &typesv1.MemoryStats{
		Time:            timestamp(m.GetTimestamp()),
		AvailableBytes:  value(m.GetAvailableBytes()),
		UsageBytes:      value(m.GetUsageBytes()),
		WorkingSetBytes: value(m.GetWorkingSetBytes()),
		RssBytes:        value(m.GetRssBytes()),
		PageFaults:      value(m.GetPageFaults()),
		MajorPageFaults: value(m.GetMajorPageFaults()),
	}
}

func fsStats(f *runtimeapi.FilesystemUsage) *typesv1.FsStats {
	if f == nil {
		return nil
	}
	return &typesv1.FsStats{
		Time:       timestamp(f.GetTimestamp()),
		UsedBytes:  value(f.GetUsedBytes()),
		InodesUsed: value(f.GetInodesUsed()),
	}
}

func networkStats(n *runtimeapi.NetworkUsage) *typesv1.NetworkStats {
	if n == nil {
		return nil
	}
	out := &typesv1.NetworkStats{Time: timestamp(n.GetTimestamp())}
	if d := n.GetDefaultInterface(); d != nil {
		out.DefaultInterface = interfaceStats(d)
	}
	for _, i := range n.GetInterfaces() {
		out.Interfaces = append(out.Interfaces, interfaceStats(i))
	}
	return out
}

func interfaceStats(i *runtimeapi.NetworkInterfaceUsage) *typesv1.InterfaceStats {
	return &typesv1.InterfaceStats{
		Name:     i.GetName(),
		RxBytes:  value(i.GetRxBytes()),
		RxErrors: value(i.GetRxErrors()),
		TxBytes:  value(i.GetTxBytes()),
		TxErrors: value(i.GetTxErrors()),
	}
}

func filesystemUsage(f *runtimeapi.FilesystemUsage) *hostv1.FilesystemUsage {
	return &hostv1.FilesystemUsage{
		Timestamp:  timestamp(f.GetTimestamp()),
		Mountpoint: f.GetFsId().GetMountpoint(),
		UsedBytes:  value(f.GetUsedBytes()),
		InodesUsed: value(f.GetInodesUsed()),
	}
}
