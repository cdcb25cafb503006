//go:build e2e

// Package statsbench measures the stats plugin on a real node: a private
// containerd with 30, then 100 pods of one busybox container each, made
// through the CRI as the core makes them; the real core/pluginhost/hostservice over
// the real CRI client; the built microlet-stats-default binary launched as
// the core launches it.
//
// For each size and kind of summary it reports GetSummary's latency (p50,
// p99 of at least minSamples calls, fresh each), the CPU time the plugin,
// the core side (host service, CRI client, stream decoding) and containerd
// spend per summary, and the plugin's resident and proportional set size.
package statsbench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/procfs"

	"github.com/microlet/microlet/core/kinds/stats"
	"github.com/microlet/microlet/core/pluginhost/hostservice"
	"github.com/microlet/microlet/core/runtime/cri"
	statsv1 "github.com/microlet/microlet/proto/microlet/stats/v1"
	"github.com/microlet/microlet/sdk/sdktest"
	"github.com/microlet/microlet/sdk/transport"
	"github.com/microlet/microlet/test/testplugins/smaps"
)

const (
	// pluginPackage serves the stats plugin under its binary name.
	pluginPackage = "github.com/microlet/microlet/plugins/cmd/microlet-plugins"
	pluginBinary  = "microlet-stats-default"
	// minSamples is the fewest GetSummary calls behind each percentile.
	minSamples = 200
)

func BenchmarkSummary(b *testing.B) {
	nd := startNode(b)
	ctx := context.Background()
	log := hclog.New(&hclog.LoggerOptions{Name: "bench", Level: hclog.Warn, Output: io.Discard})
	client, err := cri.Connect(ctx, cri.Config{RuntimeEndpoint: nd.n.Endpoint}, log)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { client.Close() })

	binary := sdktest.BuildAs(b, pluginPackage, pluginBinary)
	h := sdktest.Subprocess(b, binary, sdktest.WithHostService(hostservice.New(client, nd)), sdktest.WithEnv(transport.EnvLogLevel+"=warn"))
	if err := h.Configure(map[string]any{"pods_cgroup": nd.podsCgroup()}); err != nil {
		b.Fatal(err)
	}
	plugin, err := childProcess(binary)
	if err != nil {
		b.Fatal(err)
	}
	provider := stats.New(stats.ConnSource(h.Conn()), log)

	for _, pods := range []int{30, 100} {
		nd.grow(b, pods)
		// Let the disk usage walker see every volume once, as it would have
		// on a node that has run for a minute, and check what a real node
		// gives.
		if _, err := summary(ctx, h, &statsv1.GetSummaryRequest{Fresh: true}); err != nil {
			b.Fatal(err)
		}
		time.Sleep(time.Second)
		checkSummary(b, provider, pods)
		for _, kind := range []struct {
			name string
			req  *statsv1.GetSummaryRequest
		}{
			{"full", &statsv1.GetSummaryRequest{Fresh: true}},
			{"cadvisor", &statsv1.GetSummaryRequest{Fresh: true, CadvisorCounters: true}},
			{"cpu-and-memory", &statsv1.GetSummaryRequest{Fresh: true, OnlyCpuAndMemory: true}},
		} {
			b.Run(fmt.Sprintf("containers=%d/%s", pods, kind.name), func(b *testing.B) {
				got, err := summary(ctx, h, kind.req)
				if err != nil {
					b.Fatal(err)
				}
				if got != pods {
					b.Fatalf("the summary lists %d pods, want %d", got, pods)
				}
				measure(b, plugin, nd.n.PID, func() {
					if _, err := summary(ctx, h, kind.req); err != nil {
						b.Fatal(err)
					}
				})
			})
		}
	}
}

// checkSummary checks, through the core's provider, that the summary of
// the real node carries what the plugin measures on it.
func checkSummary(b *testing.B, provider *stats.Provider, pods int) {
	s, err := provider.Summary(context.Background(), true)
	if err != nil {
		b.Fatal(err)
	}
	n := s.Node
	if len(s.Pods) != pods || n.CPU == nil || n.Memory == nil || n.Memory.AvailableBytes == nil || n.Fs == nil ||
		n.Runtime == nil || n.Runtime.ImageFs == nil || n.Rlimit == nil || len(n.SystemContainers) != 1 {
		b.Fatalf("node stats are missing parts (or pods %d, want %d): %+v", len(s.Pods), pods, n)
	}
	for _, p := range s.Pods {
		c := p.Containers
		switch {
		case len(c) != 1 || c[0].CPU == nil || c[0].Memory == nil || c[0].Memory.WorkingSetBytes == nil:
			b.Fatalf("%s: container cpu or memory missing: %+v", p.PodRef.Name, c)
		case c[0].Logs == nil || c[0].Logs.UsedBytes == nil || *c[0].Logs.UsedBytes == 0:
			b.Fatalf("%s: the container's log (it wrote a line) measured nothing", p.PodRef.Name)
		case p.CPU == nil || p.Memory == nil || p.Memory.WorkingSetBytes == nil || *p.Memory.WorkingSetBytes == 0:
			b.Fatalf("%s: no pod cgroup stats", p.PodRef.Name)
		case p.Network == nil || p.Network.Name != "eth0" || p.Network.RxBytes == nil:
			b.Fatalf("%s: no network from the sandbox's namespace: %+v", p.PodRef.Name, p.Network)
		case p.ProcessStats == nil || p.ProcessStats.ProcessCount == nil || *p.ProcessStats.ProcessCount != 1:
			b.Fatalf("%s: process count %+v, want the one sleep", p.PodRef.Name, p.ProcessStats)
		case len(p.VolumeStats) != 1 || p.VolumeStats[0].UsedBytes == nil || *p.VolumeStats[0].UsedBytes < 64<<10:
			b.Fatalf("%s: volume stats %+v, want scratch with its 64 KiB", p.PodRef.Name, p.VolumeStats)
		case p.EphemeralStorage == nil || p.EphemeralStorage.UsedBytes == nil || *p.EphemeralStorage.UsedBytes < 64<<10:
			b.Fatalf("%s: ephemeral storage %+v", p.PodRef.Name, p.EphemeralStorage)
		}
	}
}

// measure calls once max(b.N, minSamples) times and reports latency
// percentiles, CPU time per call of the plugin, of this process and of
// containerd, and the plugin's memory afterwards.
func measure(b *testing.B, plugin, containerd int, once func()) {
	n := max(b.N, minSamples)
	cpuBefore := []time.Duration{cpuTime(b, plugin), cpuTime(b, os.Getpid()), cpuTime(b, containerd)}
	samples := make([]time.Duration, 0, n)
	b.ResetTimer()
	for range n {
		start := time.Now()
		once()
		samples = append(samples, time.Since(start))
	}
	b.StopTimer()
	var total time.Duration
	for _, s := range samples {
		total += s
	}
	b.ReportMetric(float64(total.Nanoseconds())/float64(n), "ns/op")
	slices.Sort(samples)
	for _, p := range []float64{50, 99} {
		b.ReportMetric(float64(samples[min(n-1, int(float64(n)*p/100))])/float64(time.Millisecond), fmt.Sprintf("p%g-ms", p))
	}
	for i, who := range []string{"plugin", "core", "containerd"} {
		pid := []int{plugin, os.Getpid(), containerd}[i]
		b.ReportMetric(float64(cpuTime(b, pid)-cpuBefore[i])/float64(n)/float64(time.Millisecond), who+"-cpu-ms/op")
	}
	mem, err := smaps.Rollup(strconv.Itoa(plugin))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(mem.RssKB)/1024, "plugin-rss-MB")
	b.ReportMetric(float64(mem.PssKB)/1024, "plugin-pss-MB")
}

// summary runs one GetSummary and returns how many pods it listed.
func summary(ctx context.Context, h *sdktest.Harness, req *statsv1.GetSummaryRequest) (int, error) {
	stream, err := h.Stats().GetSummary(ctx, req)
	if err != nil {
		return 0, err
	}
	pods := 0
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return pods, nil
		}
		if err != nil {
			return pods, err
		}
		if resp.GetPod() != nil {
			pods++
		}
	}
}

// cpuTime is the user and system time a process has used.
func cpuTime(b *testing.B, pid int) time.Duration {
	p, err := procfs.NewProc(pid)
	if err != nil {
		b.Fatal(err)
	}
	st, err := p.Stat()
	if err != nil {
		b.Fatal(err)
	}
	return time.Duration(st.CPUTime() * float64(time.Second))
}

// childProcess finds the child of this process running binary.
func childProcess(binary string) (int, error) {
	procs, err := procfs.AllProcs()
	if err != nil {
		return 0, err
	}
	want, err := filepath.EvalSymlinks(binary)
	if err != nil {
		return 0, err
	}
	for _, p := range procs {
		st, err := p.Stat()
		if err != nil || st.PPID != os.Getpid() {
			continue
		}
		if exe, err := p.Executable(); err == nil && exe == want {
			return p.PID, nil
		}
	}
	return 0, fmt.Errorf("no child process runs %s", binary)
}
