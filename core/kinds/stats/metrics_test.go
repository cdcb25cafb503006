package stats

import (
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"

	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk"
)

func TestResourceMetrics(t *testing.T) {
	p := &plugin{sample: &Sample{
		Node: &typesv1.NodeStats{
			NodeName: "node-a",
			Cpu:      &typesv1.CPUStats{Time: at(1), UsageCoreNanoSeconds: u(7500000000)},
			Memory:   &typesv1.MemoryStats{Time: at(2), WorkingSetBytes: u(1 << 20)},
			Swap:     &typesv1.SwapStats{Time: at(3), SwapUsageBytes: u(4096)},
			// Not a resource metric.
			Fs: &typesv1.FsStats{UsedBytes: u(1)},
		},
		Pods: []*typesv1.PodStats{{
			PodRef: &typesv1.PodReference{Name: "web", Namespace: "shop", Uid: "u1"},
			Cpu:    &typesv1.CPUStats{Time: at(4), UsageCoreNanoSeconds: u(2500000000)},
			Memory: &typesv1.MemoryStats{Time: at(5), WorkingSetBytes: u(2048)},
			Swap:   &typesv1.SwapStats{Time: at(6), SwapUsageBytes: u(10)},
			Containers: []*typesv1.ContainerStats{
				{Name: "app", StartTime: at(0), Cpu: &typesv1.CPUStats{Time: at(7), UsageCoreNanoSeconds: u(1e9)},
					Memory: &typesv1.MemoryStats{Time: at(8), WorkingSetBytes: u(1024)},
					Swap:   &typesv1.SwapStats{Time: at(9), SwapUsageBytes: u(5), SwapAvailableBytes: u(95)}},
				// No start time, no cpu: neither is reported.
				{Name: "side", Memory: &typesv1.MemoryStats{Time: at(10), WorkingSetBytes: u(0)}},
			},
		}},
	}}
	rec := get(t, served(t, p).ResourceMetricsHandler(), http.MethodGet, "/metrics/resource")
	if rec.Code != http.StatusOK {
		t.Fatalf("%d: %s", rec.Code, rec.Body)
	}
	if req := p.lastRequest(); !req.GetOnlyCpuAndMemory() || req.GetFresh() {
		t.Errorf("the plugin was asked %v, want cpu and memory from its last measurement", req)
	}

	ms := func(n int) int64 { return at(n).AsTime().UnixMilli() }
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	want := strings.Join([]string{
		"# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in core-seconds",
		"# TYPE container_cpu_usage_seconds_total counter",
		fmt.Sprintf(`container_cpu_usage_seconds_total{container="app",namespace="shop",pod="web"} 1 %d`, ms(7)),
		"# HELP container_memory_working_set_bytes [STABLE] Current working set of the container in bytes",
		"# TYPE container_memory_working_set_bytes gauge",
		fmt.Sprintf(`container_memory_working_set_bytes{container="app",namespace="shop",pod="web"} 1024 %d`, ms(8)),
		fmt.Sprintf(`container_memory_working_set_bytes{container="side",namespace="shop",pod="web"} 0 %d`, ms(10)),
		"# HELP container_start_time_seconds [STABLE] Start time of the container since unix epoch in seconds",
		"# TYPE container_start_time_seconds gauge",
		fmt.Sprintf(`container_start_time_seconds{container="app",namespace="shop",pod="web"} %s`, f(float64(at(0).AsTime().Unix()))),
		"# HELP container_swap_limit_bytes [ALPHA] Current amount of the container swap limit in bytes. Reported only on non-windows systems",
		"# TYPE container_swap_limit_bytes gauge",
		fmt.Sprintf(`container_swap_limit_bytes{container="app",namespace="shop",pod="web"} 100 %d`, ms(9)),
		"# HELP container_swap_usage_bytes [ALPHA] Current amount of the container swap usage in bytes. Reported only on non-windows systems",
		"# TYPE container_swap_usage_bytes gauge",
		fmt.Sprintf(`container_swap_usage_bytes{container="app",namespace="shop",pod="web"} 5 %d`, ms(9)),
		"# HELP node_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the node in core-seconds",
		"# TYPE node_cpu_usage_seconds_total counter",
		fmt.Sprintf(`node_cpu_usage_seconds_total 7.5 %d`, ms(1)),
		"# HELP node_memory_working_set_bytes [STABLE] Current working set of the node in bytes",
		"# TYPE node_memory_working_set_bytes gauge",
		fmt.Sprintf(`node_memory_working_set_bytes %s %d`, f(1<<20), ms(2)),
		"# HELP node_swap_usage_bytes [ALPHA] Current swap usage of the node in bytes. Reported only on non-windows systems",
		"# TYPE node_swap_usage_bytes gauge",
		fmt.Sprintf(`node_swap_usage_bytes 4096 %d`, ms(3)),
		"# HELP pod_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the pod in core-seconds",
		"# TYPE pod_cpu_usage_seconds_total counter",
		fmt.Sprintf(`pod_cpu_usage_seconds_total{namespace="shop",pod="web"} 2.5 %d`, ms(4)),
		"# HELP pod_memory_working_set_bytes [STABLE] Current working set of the pod in bytes",
		"# TYPE pod_memory_working_set_bytes gauge",
		fmt.Sprintf(`pod_memory_working_set_bytes{namespace="shop",pod="web"} 2048 %d`, ms(5)),
		"# HELP pod_swap_usage_bytes [ALPHA] Current amount of the pod swap usage in bytes. Reported only on non-windows systems",
		"# TYPE pod_swap_usage_bytes gauge",
		fmt.Sprintf(`pod_swap_usage_bytes{namespace="shop",pod="web"} 10 %d`, ms(6)),
		"# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise",
		"# TYPE resource_scrape_error gauge",
		"resource_scrape_error 0",
		"",
	}, "\n")
	if got := rec.Body.String(); got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

func TestResourceMetricsWithoutStats(t *testing.T) {
	for name, provider := range map[string]func(*testing.T) *Provider{
		"no stats plugin":  unconfigured,
		"the plugin fails": func(t *testing.T) *Provider { return served(t, &plugin{err: sdk.Retryable("runtime down")}) },
	} {
		t.Run(name, func(t *testing.T) {
			rec := get(t, provider(t).ResourceMetricsHandler(), http.MethodGet, "/metrics/resource")
			want := "# HELP resource_scrape_error [STABLE] 1 if there was an error while getting container metrics, 0 otherwise\n" +
				"# TYPE resource_scrape_error gauge\nresource_scrape_error 1\n"
			if rec.Code != http.StatusOK || rec.Body.String() != want {
				t.Errorf("%d:\n%s\nwant:\n%s", rec.Code, rec.Body, want)
			}
		})
	}
}
