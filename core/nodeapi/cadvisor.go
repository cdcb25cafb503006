package nodeapi

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// cAdvisor's labels on every container series, as the kubelet sets them
// (containerPrometheusLabelsFunc): the cgroup (id), the runtime's name for
// the container (name: its ID with containerd), its image, and the pod's
// namespace and name and the container's name.
var cadvisorLabels = []string{"container", "id", "image", "name", "namespace", "pod"}

func cadvisorDesc(name, help string, extra ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, append(append([]string(nil), cadvisorLabels...), extra...), nil)
}

// The cAdvisor metrics microlet derives from the stats plugin's summary,
// with cAdvisor's names, help and labels (github.com/google/cadvisor
// metrics/prometheus.go).
var (
	cpuUsageDesc       = cadvisorDesc("container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.", "cpu")
	memoryUsageDesc    = cadvisorDesc("container_memory_usage_bytes", "Current memory usage in bytes, including all memory regardless of when it was accessed")
	workingSetDesc     = cadvisorDesc("container_memory_working_set_bytes", "Current working set in bytes.")
	rssDesc            = cadvisorDesc("container_memory_rss", "Size of RSS in bytes.")
	swapDesc           = cadvisorDesc("container_memory_swap", "Container swap usage in bytes.")
	memoryFailuresDesc = cadvisorDesc("container_memory_failures_total", "Cumulative count of memory allocation failures.", "failure_type", "scope")
	fsUsageDesc        = cadvisorDesc("container_fs_usage_bytes", "Number of bytes that are consumed by the container on this filesystem.", "device")
	fsLimitDesc        = cadvisorDesc("container_fs_limit_bytes", "Number of bytes that can be consumed by the container on this filesystem.", "device")
	fsInodesFreeDesc   = cadvisorDesc("container_fs_inodes_free", "Number of available Inodes", "device")
	fsInodesDesc       = cadvisorDesc("container_fs_inodes_total", "Number of Inodes", "device")
	memoryCacheDesc    = cadvisorDesc("container_memory_cache", "Number of bytes of page cache memory.")
	cfsPeriodsDesc     = cadvisorDesc("container_cpu_cfs_periods_total", "Number of elapsed enforcement period intervals.")
	cfsThrottledDesc   = cadvisorDesc("container_cpu_cfs_throttled_periods_total", "Number of throttled period intervals.")
	fsReadsBytesDesc   = cadvisorDesc("container_fs_reads_bytes_total", "Cumulative count of bytes read", "device")
	fsReadsDesc        = cadvisorDesc("container_fs_reads_total", "Cumulative count of reads completed", "device")
	fsWritesBytesDesc  = cadvisorDesc("container_fs_writes_bytes_total", "Cumulative count of bytes written", "device")
	fsWritesDesc       = cadvisorDesc("container_fs_writes_total", "Cumulative count of writes completed", "device")
	rxBytesDesc        = cadvisorDesc("container_network_receive_bytes_total", "Cumulative count of bytes received", "interface")
	rxPacketsDesc      = cadvisorDesc("container_network_receive_packets_total", "Cumulative count of packets received", "interface")
	rxDroppedDesc      = cadvisorDesc("container_network_receive_packets_dropped_total", "Cumulative count of packets dropped while receiving", "interface")
	txPacketsDesc      = cadvisorDesc("container_network_transmit_packets_total", "Cumulative count of packets transmitted", "interface")
	txDroppedDesc      = cadvisorDesc("container_network_transmit_packets_dropped_total", "Cumulative count of packets dropped while transmitting", "interface")
	rxErrorsDesc       = cadvisorDesc("container_network_receive_errors_total", "Cumulative count of errors encountered while receiving", "interface")
	txBytesDesc        = cadvisorDesc("container_network_transmit_bytes_total", "Cumulative count of bytes transmitted", "interface")
	txErrorsDesc       = cadvisorDesc("container_network_transmit_errors_total", "Cumulative count of errors encountered while transmitting", "interface")
	startTimeDesc      = cadvisorDesc("container_start_time_seconds", "Start time of the container since unix epoch in seconds.")
	lastSeenDesc       = cadvisorDesc("container_last_seen", "Last time a container was seen by the exporter")
	scrapeErrorDesc    = prometheus.NewDesc("container_scrape_error", "1 if there was an error while getting container metrics, 0 otherwise", nil, nil)

	machineLabels          = []string{"boot_id", "machine_id", "system_uuid"}
	machineCoresDesc       = prometheus.NewDesc("machine_cpu_cores", "Number of logical CPU cores.", machineLabels, nil)
	machinePhysicalDesc    = prometheus.NewDesc("machine_cpu_physical_cores", "Number of physical CPU cores.", machineLabels, nil)
	machineSocketsDesc     = prometheus.NewDesc("machine_cpu_sockets", "Number of CPU sockets.", machineLabels, nil)
	machineMemoryDesc      = prometheus.NewDesc("machine_memory_bytes", "Amount of memory installed on the machine.", machineLabels, nil)
	machineSwapDesc        = prometheus.NewDesc("machine_swap_bytes", "Amount of swap memory available on the machine.", machineLabels, nil)
	machineScrapeErrorDesc = prometheus.NewDesc("machine_scrape_error", "1 if there was an error while getting machine metrics, 0 otherwise.", nil, nil)
)

// cadvisorMetrics serves /metrics/cadvisor: container metrics in cAdvisor's
// format for the node ("/"), each pod (its cgroup) and each container,
// from the stats plugin's last summary, and the machine's metrics.
func (h *handlers) cadvisorMetrics() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		reg := prometheus.NewRegistry()
		reg.MustRegister(&cadvisorCollector{h: h, ctx: r.Context()})
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}).ServeHTTP(w, r)
	})
}

// cadvisorCollector is one scrape of /metrics/cadvisor.
type cadvisorCollector struct {
	h   *handlers
	ctx context.Context
}

func (c *cadvisorCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{cpuUsageDesc, memoryUsageDesc, workingSetDesc, rssDesc, swapDesc, memoryFailuresDesc,
		memoryCacheDesc, cfsPeriodsDesc, cfsThrottledDesc, fsReadsBytesDesc, fsReadsDesc, fsWritesBytesDesc, fsWritesDesc,
		fsUsageDesc, fsLimitDesc, fsInodesFreeDesc, fsInodesDesc, rxBytesDesc, rxErrorsDesc, txBytesDesc, txErrorsDesc,
		rxPacketsDesc, rxDroppedDesc, txPacketsDesc, txDroppedDesc,
		startTimeDesc, lastSeenDesc, scrapeErrorDesc, machineCoresDesc, machinePhysicalDesc, machineSocketsDesc,
		machineMemoryDesc, machineSwapDesc, machineScrapeErrorDesc} {
		ch <- d
	}
}

func (c *cadvisorCollector) Collect(ch chan<- prometheus.Metric) {
	c.collectMachine(ch)
	summary, err := c.h.opts.Stats.CadvisorSample(c.ctx)
	if err != nil {
		c.h.log.Debug("no container metrics for /metrics/cadvisor", "error", err)
		ch <- prometheus.MustNewConstMetric(scrapeErrorDesc, prometheus.GaugeValue, 1)
		return
	}
	ch <- prometheus.MustNewConstMetric(scrapeErrorDesc, prometheus.GaugeValue, 0)
	now := time.Now()
	containers := c.h.containerIndex()

	node := summary.Node
	root := series{id: "/", now: now}
	root.cgroup(ch, node.GetCpu(), node.GetMemory(), node.GetSwap(), node.GetIo())
	root.network(ch, node.GetNetwork())

	for _, pod := range summary.Pods {
		ref := pod.GetPodRef()
		podCgroup, _ := c.h.podCgroup(types.UID(ref.GetUid()))
		p := series{id: podCgroup, namespace: ref.GetNamespace(), pod: ref.GetName(), now: now}
		p.cgroup(ch, pod.GetCpu(), pod.GetMemory(), pod.GetSwap(), pod.GetIo())
		p.network(ch, pod.GetNetwork())
		for _, ctr := range pod.GetContainers() {
			s := p
			s.container = ctr.GetName()
			if ref, ok := containers[containerKey{ref.GetNamespace(), ref.GetName(), ctr.GetName()}]; ok {
				s.name, s.image = ref.id, ref.image
				if podCgroup != "" {
					s.id = podCgroup + "/" + ref.id
				}
			}
			s.containerStats(ch, ctr)
		}
	}
}

func (c *cadvisorCollector) collectMachine(ch chan<- prometheus.Metric) {
	m := c.h.machine()
	labels := []string{m.BootID, m.MachineID, m.SystemUUID}
	for _, v := range []struct {
		desc  *prometheus.Desc
		value float64
	}{
		{machineCoresDesc, float64(m.NumCores)}, {machinePhysicalDesc, float64(m.NumPhysicalCores)},
		{machineSocketsDesc, float64(m.NumSockets)}, {machineMemoryDesc, float64(m.MemoryCapacity)},
		{machineSwapDesc, float64(m.SwapCapacity)},
	} {
		ch <- prometheus.MustNewConstMetric(v.desc, prometheus.GaugeValue, v.value, labels...)
	}
	ch <- prometheus.MustNewConstMetric(machineScrapeErrorDesc, prometheus.GaugeValue, 0)
}

func seconds(nanos uint64) float64 { return float64(nanos) / float64(time.Second) }

// containerKey names a container of a pod.
type containerKey struct{ namespace, pod, container string }

// containerRef is a running container's runtime ID and image.
type containerRef struct{ id, image string }

// containerIndex maps the pods' containers to their current instance, from
// their statuses.
func (h *handlers) containerIndex() map[containerKey]containerRef {
	out := map[containerKey]containerRef{}
	for _, p := range h.opts.Pods.PodsWithStatus() {
		statuses := append(append(append([]v1.ContainerStatus(nil), p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...),
			p.Status.EphemeralContainerStatuses...)
		for _, cs := range statuses {
			if _, id, ok := strings.Cut(cs.ContainerID, "://"); ok {
				out[containerKey{p.Namespace, p.Name, cs.Name}] = containerRef{id: id, image: cs.Image}
			}
		}
	}
	return out
}

func (h *handlers) podCgroup(uid types.UID) (string, bool) {
	if h.opts.PodCgroup == nil {
		return "", false
	}
	return h.opts.PodCgroup(uid)
}
