package stats

import (
	"context"
	"errors"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"

	"github.com/microlet/microlet/core/pluginhost"
)

// The kubelet's resource metrics (pkg/kubelet/metrics/collectors/
// resource_metrics.go): names, labels, and help as its metrics framework
// prints it, with the stability level in front. scrape_error, deprecated
// since 1.29, is hidden in the kubelet this follows and left out.
var (
	nodeCPUUsageDesc = prometheus.NewDesc("node_cpu_usage_seconds_total",
		"[STABLE] Cumulative cpu time consumed by the node in core-seconds", nil, nil)
	nodeMemoryUsageDesc = prometheus.NewDesc("node_memory_working_set_bytes",
		"[STABLE] Current working set of the node in bytes", nil, nil)
	nodeSwapUsageDesc = prometheus.NewDesc("node_swap_usage_bytes",
		"[ALPHA] Current swap usage of the node in bytes. Reported only on non-windows systems", nil, nil)
	containerCPUUsageDesc = prometheus.NewDesc("container_cpu_usage_seconds_total",
		"[STABLE] Cumulative cpu time consumed by the container in core-seconds", []string{"container", "pod", "namespace"}, nil)
	containerMemoryUsageDesc = prometheus.NewDesc("container_memory_working_set_bytes",
		"[STABLE] Current working set of the container in bytes", []string{"container", "pod", "namespace"}, nil)
	containerSwapUsageDesc = prometheus.NewDesc("container_swap_usage_bytes",
		"[ALPHA] Current amount of the container swap usage in bytes. Reported only on non-windows systems", []string{"container", "pod", "namespace"}, nil)
	containerSwapLimitDesc = prometheus.NewDesc("container_swap_limit_bytes",
		"[ALPHA] Current amount of the container swap limit in bytes. Reported only on non-windows systems", []string{"container", "pod", "namespace"}, nil)
	podCPUUsageDesc = prometheus.NewDesc("pod_cpu_usage_seconds_total",
		"[STABLE] Cumulative cpu time consumed by the pod in core-seconds", []string{"pod", "namespace"}, nil)
	podMemoryUsageDesc = prometheus.NewDesc("pod_memory_working_set_bytes",
		"[STABLE] Current working set of the pod in bytes", []string{"pod", "namespace"}, nil)
	podSwapUsageDesc = prometheus.NewDesc("pod_swap_usage_bytes",
		"[ALPHA] Current amount of the pod swap usage in bytes. Reported only on non-windows systems", []string{"pod", "namespace"}, nil)
	resourceScrapeErrorDesc = prometheus.NewDesc("resource_scrape_error",
		"[STABLE] 1 if there was an error while getting container metrics, 0 otherwise", nil, nil)
	containerStartTimeDesc = prometheus.NewDesc("container_start_time_seconds",
		"[STABLE] Start time of the container since unix epoch in seconds", []string{"container", "pod", "namespace"}, nil)
)

// ResourceMetricsHandler serves /metrics/resource: the kubelet's resource
// metrics from the plugin's last cpu and memory measurement, each stamped
// with its sample's time. Without stats, resource_scrape_error is 1 and
// nothing else is reported.
func (p *Provider) ResourceMetricsHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// A registry per scrape: the collector asks the plugin within the
		// scrape's own request, and what it reports is only what exists now.
		reg := prometheus.NewRegistry()
		reg.MustRegister(&resourceCollector{provider: p, ctx: r.Context()})
		promhttp.HandlerFor(reg, promhttp.HandlerOpts{ErrorHandling: promhttp.ContinueOnError}).ServeHTTP(w, r)
	})
}

// resourceCollector is the kubelet's resourceMetricsCollector for one scrape.
type resourceCollector struct {
	provider *Provider
	ctx      context.Context
}

func (c *resourceCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		nodeCPUUsageDesc, nodeMemoryUsageDesc, nodeSwapUsageDesc, containerStartTimeDesc, containerCPUUsageDesc,
		containerMemoryUsageDesc, containerSwapUsageDesc, containerSwapLimitDesc, podCPUUsageDesc, podMemoryUsageDesc,
		podSwapUsageDesc, resourceScrapeErrorDesc,
	} {
		ch <- d
	}
}

func (c *resourceCollector) Collect(ch chan<- prometheus.Metric) {
	s, err := c.provider.cpuAndMemory(c.ctx)
	if err != nil {
		if errors.Is(err, pluginhost.ErrUnavailable) {
			c.provider.log.Debug("no resource metrics: the stats plugin is unavailable", "error", err)
		} else {
			c.provider.log.Error("Error getting summary for resourceMetric prometheus endpoint", "error", err)
		}
		ch <- prometheus.MustNewConstMetric(resourceScrapeErrorDesc, prometheus.GaugeValue, 1)
		return
	}
	ch <- prometheus.MustNewConstMetric(resourceScrapeErrorDesc, prometheus.GaugeValue, 0)

	n := s.Node
	if n.CPU != nil && n.CPU.UsageCoreNanoSeconds != nil {
		ch <- stamped(n.CPU.Time, nodeCPUUsageDesc, prometheus.CounterValue, seconds(*n.CPU.UsageCoreNanoSeconds))
	}
	if n.Memory != nil && n.Memory.WorkingSetBytes != nil {
		ch <- stamped(n.Memory.Time, nodeMemoryUsageDesc, prometheus.GaugeValue, float64(*n.Memory.WorkingSetBytes))
	}
	if n.Swap != nil && n.Swap.SwapUsageBytes != nil {
		ch <- stamped(n.Swap.Time, nodeSwapUsageDesc, prometheus.GaugeValue, float64(*n.Swap.SwapUsageBytes))
	}
	for _, pod := range s.Pods {
		for _, ctr := range pod.Containers {
			collectContainer(ch, pod, ctr)
		}
		labels := []string{pod.PodRef.Name, pod.PodRef.Namespace}
		if pod.CPU != nil && pod.CPU.UsageCoreNanoSeconds != nil {
			ch <- stamped(pod.CPU.Time, podCPUUsageDesc, prometheus.CounterValue, seconds(*pod.CPU.UsageCoreNanoSeconds), labels...)
		}
		if pod.Memory != nil && pod.Memory.WorkingSetBytes != nil {
			ch <- stamped(pod.Memory.Time, podMemoryUsageDesc, prometheus.GaugeValue, float64(*pod.Memory.WorkingSetBytes), labels...)
		}
		if pod.Swap != nil && pod.Swap.SwapUsageBytes != nil {
			ch <- stamped(pod.Swap.Time, podSwapUsageDesc, prometheus.GaugeValue, float64(*pod.Swap.SwapUsageBytes), labels...)
		}
	}
}

func collectContainer(ch chan<- prometheus.Metric, pod statsapi.PodStats, c statsapi.ContainerStats) {
	labels := []string{c.Name, pod.PodRef.Name, pod.PodRef.Namespace}
	if c.StartTime.Unix() > 0 {
		ch <- prometheus.MustNewConstMetric(containerStartTimeDesc, prometheus.GaugeValue,
			float64(c.StartTime.UnixNano())/float64(time.Second), labels...)
	}
	if c.CPU != nil && c.CPU.UsageCoreNanoSeconds != nil {
		ch <- stamped(c.CPU.Time, containerCPUUsageDesc, prometheus.CounterValue, seconds(*c.CPU.UsageCoreNanoSeconds), labels...)
	}
	if c.Memory != nil && c.Memory.WorkingSetBytes != nil {
		ch <- stamped(c.Memory.Time, containerMemoryUsageDesc, prometheus.GaugeValue, float64(*c.Memory.WorkingSetBytes), labels...)
	}
	if c.Swap == nil {
		return
	}
	if c.Swap.SwapUsageBytes != nil {
		ch <- stamped(c.Swap.Time, containerSwapUsageDesc, prometheus.GaugeValue, float64(*c.Swap.SwapUsageBytes), labels...)
	}
	if c.Swap.SwapAvailableBytes != nil {
		var used float64
		if c.Swap.SwapUsageBytes != nil {
			used = float64(*c.Swap.SwapUsageBytes)
		}
		ch <- stamped(c.Swap.Time, containerSwapLimitDesc, prometheus.GaugeValue, float64(*c.Swap.SwapAvailableBytes)+used, labels...)
	}
}

// stamped is a sample with the time it was measured at, when known.
func stamped(at metav1.Time, desc *prometheus.Desc, kind prometheus.ValueType, value float64, labels ...string) prometheus.Metric {
	m := prometheus.MustNewConstMetric(desc, kind, value, labels...)
	if at.IsZero() {
		return m
	}
	return prometheus.NewMetricWithTimestamp(at.Time, m)
}

func seconds(nanos uint64) float64 { return float64(nanos) / float64(time.Second) }
