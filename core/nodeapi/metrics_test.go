package nodeapi

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/protobuf/types/known/timestamppb"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/kinds/stats"
	"github.com/microlet/microlet/core/pluginhost"
	statsv1 "github.com/microlet/microlet/proto/microlet/stats/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/sdktest"
)

func TestRequestMetrics(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := newRequestMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	handler := m.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {}), serverReadWrite)
	for _, target := range []string{"/pods", "/metrics/cadvisor", "/exec/ns/p/c", "/portForward/ns/p", "/secret-path/x", "/metrics", "/debug/pprof/heap"} {
		handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", target, nil))
	}
	handler.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("PROPFIND", "/pods", nil))
	want := `
# HELP kubelet_http_requests_total [ALPHA] Number of the http requests received since the server started
# TYPE kubelet_http_requests_total counter
kubelet_http_requests_total{long_running="false",method="GET",path="metrics",server_type="readwrite"} 1
kubelet_http_requests_total{long_running="false",method="GET",path="metrics/cadvisor",server_type="readwrite"} 1
kubelet_http_requests_total{long_running="false",method="GET",path="other",server_type="readwrite"} 1
kubelet_http_requests_total{long_running="false",method="GET",path="pods",server_type="readwrite"} 1
kubelet_http_requests_total{long_running="false",method="other",path="pods",server_type="readwrite"} 1
kubelet_http_requests_total{long_running="true",method="GET",path="debug",server_type="readwrite"} 1
kubelet_http_requests_total{long_running="true",method="GET",path="exec",server_type="readwrite"} 1
kubelet_http_requests_total{long_running="true",method="GET",path="portForward",server_type="readwrite"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "kubelet_http_requests_total"); err != nil {
		t.Error(err)
	}
	if n := testutil.CollectAndCount(m.inflight); n != 8 {
		t.Errorf("%d inflight series, want 8", n)
	}
}

func TestPluginMetrics(t *testing.T) {
	status := []pluginhost.Status{
		{Kind: "stats", Name: "default", State: pluginhost.Serving, Restarts: 2, Swaps: 1},
		{Kind: "eviction", Name: "kubelet", State: pluginhost.Restarting, Restarts: 5},
	}
	m := NewPluginMetrics(func() []pluginhost.Status { return status })
	m.ObserveCall(pluginhost.FinishedCall{Kind: "stats", Name: "default", Method: "/microlet.stats.v1.StatsService/GetSummary", Duration: 3 * time.Millisecond})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	want := `
# HELP microlet_plugin_restarts_total Restarts of the plugin slot's process after it exited or hung.
# TYPE microlet_plugin_restarts_total counter
microlet_plugin_restarts_total{kind="eviction",name="kubelet"} 5
microlet_plugin_restarts_total{kind="stats",name="default"} 2
# HELP microlet_plugin_swaps_total Hot swaps of the plugin slot's process for a new binary or config.
# TYPE microlet_plugin_swaps_total counter
microlet_plugin_swaps_total{kind="eviction",name="kubelet"} 0
microlet_plugin_swaps_total{kind="stats",name="default"} 1
# HELP microlet_plugin_up 1 when the plugin slot has a process serving, 0 while it starts, restarts or has failed.
# TYPE microlet_plugin_up gauge
microlet_plugin_up{kind="eviction",name="kubelet"} 0
microlet_plugin_up{kind="stats",name="default"} 1
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "microlet_plugin_up", "microlet_plugin_restarts_total", "microlet_plugin_swaps_total"); err != nil {
		t.Error(err)
	}
	families, _ := reg.Gather()
	for _, f := range families {
		if f.GetName() == "microlet_plugin_call_duration_seconds" {
			h := f.GetMetric()[0].GetHistogram()
			if h.GetSampleCount() != 1 || h.GetSampleSum() != 0.003 {
				t.Errorf("call histogram %v", h)
			}
			return
		}
	}
	t.Error("no microlet_plugin_call_duration_seconds")
}

// statsPlugin answers every summary with one node and one pod.
type statsPlugin struct{}

func (statsPlugin) Configure(context.Context, *struct{}, *sdk.Host) error { return nil }

func (statsPlugin) GetSummary(context.Context, *statsv1.GetSummaryRequest) (*typesv1.NodeStats, []*typesv1.PodStats, error) {
	at := timestamppb.New(time.Unix(1700000000, 0))
	u := func(v uint64) *uint64 { return &v }
	node := &typesv1.NodeStats{NodeName: "node-1",
		Cpu:    &typesv1.CPUStats{Time: at, UsageCoreNanoSeconds: u(5e9)},
		Memory: &typesv1.MemoryStats{Time: at, WorkingSetBytes: u(1000), UsageBytes: u(2000), CacheBytes: u(700)},
		Swap:   &typesv1.SwapStats{Time: at, SwapUsageBytes: u(64)},
		Io:     &typesv1.IOStats{Time: at, Devices: []*typesv1.DeviceIOStats{{Device: "/dev/vda", Major: 254, Reads: u(9), ReadBytes: u(36864), Writes: u(4), WriteBytes: u(16384)}}}}
	pod := &typesv1.PodStats{PodRef: &typesv1.PodReference{Name: "web", Namespace: "default", Uid: "uid-web"},
		Cpu: &typesv1.CPUStats{Time: at, UsageCoreNanoSeconds: u(2e9), CfsPeriods: u(100), CfsThrottledPeriods: u(25)},
		Network: &typesv1.NetworkStats{Time: at, Interfaces: []*typesv1.InterfaceStats{{Name: "eth0", RxBytes: u(10), TxBytes: u(20),
			RxPackets: u(3), RxDropped: u(1), TxPackets: u(4), TxDropped: u(0)}}},
		Containers: []*typesv1.ContainerStats{{Name: "app", StartTime: timestamppb.New(time.Unix(1690000000, 0)),
			Cpu:    &typesv1.CPUStats{Time: at, UsageCoreNanoSeconds: u(1e9), CfsPeriods: u(90), CfsThrottledPeriods: u(20)},
			Memory: &typesv1.MemoryStats{Time: at, WorkingSetBytes: u(300), RssBytes: u(200), PageFaults: u(7), CacheBytes: u(50)},
			Io:     &typesv1.IOStats{Time: at, Devices: []*typesv1.DeviceIOStats{{Device: "/dev/vda", Major: 254, Reads: u(2), ReadBytes: u(8192)}}},
			Rootfs: &typesv1.FsStats{Time: at, UsedBytes: u(4096)}}}}
	return node, []*typesv1.PodStats{pod}, nil
}

func TestCadvisorMetrics(t *testing.T) {
	plugin := sdktest.InProcess(t, sdk.Info{Kind: sdk.KindStats, Name: "fake", Version: "0.0.1"}, statsPlugin{})
	if err := plugin.Configure(nil); err != nil {
		t.Fatal(err)
	}
	h := testHandlers(t, fakePods{webPod()}, &fakeRuntime{}, nil)
	h.opts.Stats = stats.New(stats.ConnSource(plugin.Conn()), hclog.NewNullLogger())
	h.opts.PodCgroup = func(uid types.UID) (string, bool) { return "/kubepods/burstable/pod" + string(uid), true }
	rec := h.do(t, "GET", "/metrics/cadvisor", nil)
	body := rec.Body.String()
	for _, want := range []string{
		`container_cpu_usage_seconds_total{container="",cpu="total",id="/",image="",name="",namespace="",pod=""} 5 1700000000000`,
		`container_cpu_usage_seconds_total{container="",cpu="total",id="/kubepods/burstable/poduid-web",image="",name="",namespace="default",pod="web"} 2`,
		`container_cpu_usage_seconds_total{container="app",cpu="total",id="/kubepods/burstable/poduid-web/c2",image="busybox",name="c2",namespace="default",pod="web"} 1`,
		`container_memory_working_set_bytes{container="app",id="/kubepods/burstable/poduid-web/c2",image="busybox",name="c2",namespace="default",pod="web"} 300`,
		`container_memory_rss{container="app",`,
		// Unaccounted swap reads 0, as cAdvisor's; the node's is known.
		`container_memory_swap{container="app",id="/kubepods/burstable/poduid-web/c2",image="busybox",name="c2",namespace="default",pod="web"} 0`,
		`container_memory_swap{container="",id="/",image="",name="",namespace="",pod=""} 64 1700000000000`,
		`container_memory_failures_total{container="app",failure_type="pgfault",`,
		`container_fs_usage_bytes{container="app",device="",`,
		`container_network_receive_bytes_total{container="",id="/kubepods/burstable/poduid-web",image="",interface="eth0",name="",namespace="default",pod="web"} 10`,
		`container_start_time_seconds{container="app",id="/kubepods/burstable/poduid-web/c2",image="busybox",name="c2",namespace="default",pod="web"} 1.69e+09`,
		`container_last_seen{container="app",`,
		`container_memory_cache{container="",id="/",image="",name="",namespace="",pod=""} 700 1700000000000`,
		`container_memory_cache{container="app",id="/kubepods/burstable/poduid-web/c2",image="busybox",name="c2",namespace="default",pod="web"} 50 1700000000000`,
		`container_cpu_cfs_periods_total{container="",id="/kubepods/burstable/poduid-web",image="",name="",namespace="default",pod="web"} 100 1700000000000`,
		`container_cpu_cfs_throttled_periods_total{container="app",id="/kubepods/burstable/poduid-web/c2",image="busybox",name="c2",namespace="default",pod="web"} 20 1700000000000`,
		`container_fs_reads_bytes_total{container="",device="/dev/vda",id="/",image="",name="",namespace="",pod=""} 36864 1700000000000`,
		`container_fs_reads_total{container="",device="/dev/vda",id="/",image="",name="",namespace="",pod=""} 9 1700000000000`,
		`container_fs_writes_bytes_total{container="",device="/dev/vda",id="/",image="",name="",namespace="",pod=""} 16384 1700000000000`,
		`container_fs_writes_total{container="",device="/dev/vda",id="/",image="",name="",namespace="",pod=""} 4 1700000000000`,
		`container_fs_reads_total{container="app",device="/dev/vda",id="/kubepods/burstable/poduid-web/c2",image="busybox",name="c2",namespace="default",pod="web"} 2 1700000000000`,
		`container_network_receive_packets_total{container="",id="/kubepods/burstable/poduid-web",image="",interface="eth0",name="",namespace="default",pod="web"} 3 1700000000000`,
		`container_network_receive_packets_dropped_total{container="",id="/kubepods/burstable/poduid-web",image="",interface="eth0",name="",namespace="default",pod="web"} 1 1700000000000`,
		`container_network_transmit_packets_total{container="",id="/kubepods/burstable/poduid-web",image="",interface="eth0",name="",namespace="default",pod="web"} 4 1700000000000`,
		`container_network_transmit_packets_dropped_total{container="",id="/kubepods/burstable/poduid-web",image="",interface="eth0",name="",namespace="default",pod="web"} 0 1700000000000`,
		"# TYPE container_cpu_cfs_periods_total counter",
		"# HELP container_memory_cache Number of bytes of page cache memory.",
		`container_scrape_error 0`,
		`machine_cpu_cores{`,
		`machine_memory_bytes{`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("/metrics/cadvisor lacks %s", want)
		}
	}
	// The node has no CFS quota: no CFS series, as cAdvisor's for "/".
	if strings.Contains(body, `container_cpu_cfs_periods_total{container="",id="/"`) {
		t.Error("/metrics/cadvisor has CFS periods for the node, which has no quota")
	}
	if t.Failed() {
		t.Log(body)
	}

	// Without stats: the scrape error, and the machine still.
	h.opts.Stats = stats.New(failingSource{}, hclog.NewNullLogger())
	body = h.do(t, "GET", "/metrics/cadvisor", nil).Body.String()
	if !strings.Contains(body, "container_scrape_error 1") || !strings.Contains(body, "machine_cpu_cores{") {
		t.Errorf("without stats: %s", body)
	}
}

// failingSource is a stats plugin host without a serving plugin.
type failingSource struct{}

func (failingSource) Call(context.Context, func(context.Context, pluginhost.Conn[statsv1.StatsServiceClient]) error) error {
	return fmt.Errorf("%w: no stats plugin is configured", pluginhost.ErrUnavailable)
}
