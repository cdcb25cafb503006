package nodeapi

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"google.golang.org/protobuf/types/known/timestamppb"

	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// series are the label values of one cgroup's metrics.
type series struct {
	container, id, image, name, namespace, pod string
	now                                        time.Time
}

func (s series) labels(extra ...string) []string {
	return append([]string{s.container, s.id, s.image, s.name, s.namespace, s.pod}, extra...)
}

// emit sends one sample, stamped with at when the plugin measured it then.
func (s series) emit(ch chan<- prometheus.Metric, at *timestamppb.Timestamp, desc *prometheus.Desc, kind prometheus.ValueType, v float64, extra ...string) {
	m := prometheus.MustNewConstMetric(desc, kind, v, s.labels(extra...)...)
	if at != nil {
		m = prometheus.NewMetricWithTimestamp(at.AsTime(), m)
	}
	ch <- m
}

// metric is one optional value of a family.
type metric struct {
	desc  *prometheus.Desc
	value *uint64
}

// emitAll sends each known value of list as kind, with the same extra labels.
func (s series) emitAll(ch chan<- prometheus.Metric, at *timestamppb.Timestamp, kind prometheus.ValueType, list []metric, extra ...string) {
	for _, v := range list {
		if v.value != nil {
			s.emit(ch, at, v.desc, kind, float64(*v.value), extra...)
		}
	}
}

// cgroup emits what the node, a pod and a container have alike: cpu, memory,
// swap and block I/O.
func (s series) cgroup(ch chan<- prometheus.Metric, cpu *typesv1.CPUStats, m *typesv1.MemoryStats, swap *typesv1.SwapStats, io *typesv1.IOStats) {
	s.cpu(ch, cpu)
	s.memory(ch, m, swap)
	s.blockIO(ch, io)
}

// cpu emits the cgroup's cpu time and, when it has a CFS quota, its CFS
// periods (cAdvisor's condition: a quota in the container's spec).
func (s series) cpu(ch chan<- prometheus.Metric, cpu *typesv1.CPUStats) {
	if cpu == nil {
		return
	}
	if cpu.UsageCoreNanoSeconds != nil {
		s.emit(ch, cpu.GetTime(), cpuUsageDesc, prometheus.CounterValue, seconds(cpu.GetUsageCoreNanoSeconds()), "total")
	}
	s.emitAll(ch, cpu.GetTime(), prometheus.CounterValue, []metric{{cfsPeriodsDesc, cpu.CfsPeriods}, {cfsThrottledDesc, cpu.CfsThrottledPeriods}})
}

// memory emits a cgroup's memory metrics. container_memory_swap goes with
// them, as in cAdvisor, whose value is 0 where the kernel does not account
// the cgroup's swap (cgroup v1 without memsw): dashboards sum it.
func (s series) memory(ch chan<- prometheus.Metric, m *typesv1.MemoryStats, swap *typesv1.SwapStats) {
	if m == nil {
		return
	}
	swapped, at := 0.0, m.GetTime()
	if swap != nil && swap.SwapUsageBytes != nil {
		swapped, at = float64(swap.GetSwapUsageBytes()), swap.GetTime()
	}
	s.emit(ch, at, swapDesc, prometheus.GaugeValue, swapped)
	s.emitAll(ch, m.GetTime(), prometheus.GaugeValue, []metric{
		{memoryUsageDesc, m.UsageBytes}, {workingSetDesc, m.WorkingSetBytes}, {rssDesc, m.RssBytes}, {memoryCacheDesc, m.CacheBytes},
	})
	if m.PageFaults != nil {
		s.emit(ch, m.GetTime(), memoryFailuresDesc, prometheus.CounterValue, float64(m.GetPageFaults()), "pgfault", "container")
	}
	if m.MajorPageFaults != nil {
		s.emit(ch, m.GetTime(), memoryFailuresDesc, prometheus.CounterValue, float64(m.GetMajorPageFaults()), "pgmajfault", "container")
	}
}

// blockIO emits the cgroup's block I/O per device, as cAdvisor's DiskIO
// metrics: only for the devices the kernel counted any on.
func (s series) blockIO(ch chan<- prometheus.Metric, io *typesv1.IOStats) {
	for _, d := range io.GetDevices() {
		s.emitAll(ch, io.GetTime(), prometheus.CounterValue, []metric{
			{fsReadsBytesDesc, d.ReadBytes}, {fsReadsDesc, d.Reads}, {fsWritesBytesDesc, d.WriteBytes}, {fsWritesDesc, d.Writes},
		}, d.GetDevice())
	}
}

func (s series) network(ch chan<- prometheus.Metric, n *typesv1.NetworkStats) {
	for _, iface := range n.GetInterfaces() {
		s.emitAll(ch, n.GetTime(), prometheus.CounterValue, []metric{
			{rxBytesDesc, iface.RxBytes}, {rxErrorsDesc, iface.RxErrors}, {txBytesDesc, iface.TxBytes}, {txErrorsDesc, iface.TxErrors},
			{rxPacketsDesc, iface.RxPackets}, {rxDroppedDesc, iface.RxDropped}, {txPacketsDesc, iface.TxPackets}, {txDroppedDesc, iface.TxDropped},
		}, iface.GetName())
	}
}

// containerStats emits a container's metrics: cpu, memory and swap, block
// I/O, its writable layer (device unknown to the summary: ""), its start
// and when it was seen.
func (s series) containerStats(ch chan<- prometheus.Metric, c *typesv1.ContainerStats) {
	s.cgroup(ch, c.GetCpu(), c.GetMemory(), c.GetSwap(), c.GetIo())
	if fs := c.GetRootfs(); fs != nil {
		s.emitAll(ch, fs.GetTime(), prometheus.GaugeValue, []metric{
			{fsUsageDesc, fs.UsedBytes}, {fsLimitDesc, fs.CapacityBytes}, {fsInodesFreeDesc, fs.InodesFree}, {fsInodesDesc, fs.Inodes},
		}, "")
	}
	if start := c.GetStartTime(); start != nil {
		s.emit(ch, nil, startTimeDesc, prometheus.GaugeValue, float64(start.AsTime().Unix()))
	}
	s.emit(ch, timestamppb.New(s.now), lastSeenDesc, prometheus.GaugeValue, float64(s.now.Unix()))
}
