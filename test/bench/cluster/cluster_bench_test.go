//go:build e2e

// Package clusterbench measures microlet against the upstream kubelet
// v1.34 as nodes of one real control plane (internal/devcluster), each on
// a containerd of its own (internal/devnode): pod startup latency as the
// control plane sees it (create call to Running in a watch, per pod, p50
// and p99 as upstream's density test reports it) and deletion to gone,
// for batches of 10, 30 and 100 pods created through the API; then, with
// 30 pods each, the API requests each agent makes while idle (the API
// server's audit log, by user system:node:<name>), its PSS (smaps_rollup,
// summed over its processes: microlet's core and plugins; the mean of 12
// reads over the window) and its idle
// CPU. Batches alternate between the agents; the idle figures are taken
// over the same window for both. docs/performance.md has the results.
package clusterbench

import (
	"cmp"
	"context"
	"fmt"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/prometheus/procfs"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/microlet/microlet/internal/devcluster"
	"github.com/microlet/microlet/internal/e2e"
	pressuree2e "github.com/microlet/microlet/test/e2e/pressure"
)

func TestMain(m *testing.M) { os.Exit(pressuree2e.Main(m)) }

// sizes are the batches (CLUSTER_BENCH_SIZES, comma-separated); runs how
// often each runs per agent (CLUSTER_BENCH_RUNS): fewer, for one figure.
var (
	sizes = envInts("CLUSTER_BENCH_SIZES", []int{10, 30, 100})
	runs  = envInts("CLUSTER_BENCH_RUNS", []int{2})[0]
)

// envInts reads a comma-separated list of positive integers from the
// environment; def if unset. A bad value panics: the bench cannot run as asked.
func envInts(name string, def []int) []int {
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			panic(fmt.Sprintf("%s=%q: want positive integers separated by commas", name, v))
		}
		out = append(out, n)
	}
	return out
}

// idlePods is how many pods each agent runs while idle; settle how long
// it has after they run before the window, idleWindow the window.
const (
	idlePods   = 30
	settle     = 30 * time.Second
	idleWindow = 2 * time.Minute
	// memorySamples are the PSS reads over idleWindow, their mean reported.
	memorySamples = 12
)

// samples are an agent's per-pod latencies of one size, every run pooled.
// agentCPU and machineCPU are, per start of a batch, the CPU time the
// agent's processes and the whole machine used.
type samples struct{ start, gone, agentCPU, machineCPU []time.Duration }

// idle is an agent's idle figures with idlePods pods.
type idle struct {
	requestsPerMinute float64
	pssKB, anonKB     int64
	millicores        float64
	// processes is the mean PSS of each of the agent's processes
	// (processMeans).
	processes string
}

func BenchmarkCluster(b *testing.B) {
	c := devcluster.StartT(b, devcluster.Options{Controllers: true})
	client := benchClient(b, c)
	agents := []*agent{startMicrolet(b, c, "bench-microlet"), startKubelet(b, c, "bench-kubelet")}
	for _, a := range agents {
		waitNodeReady(b, client, a.node)
	}
	lat := map[string]map[int]*samples{}
	for _, a := range agents {
		lat[a.name] = map[int]*samples{}
		for _, size := range sizes {
			lat[a.name][size] = &samples{}
		}
	}
	for run := range runs {
		for i, size := range sizes {
			order := agents
			if (run+i)%2 == 1 {
				order = []*agent{agents[1], agents[0]}
			}
			for _, a := range order {
				bt := newBatch(b, client, fmt.Sprintf("%s-%d-%d", a.name, size, run), a.node, size)
				before := cpuNow(b, a)
				bt.create(b)
				started := cpuNow(b, a)
				bt.remove(b)
				s := lat[a.name][size]
				s.agentCPU = append(s.agentCPU, started.agent-before.agent)
				s.machineCPU = append(s.machineCPU, started.machine-before.machine)
				s.start = append(s.start, bt.latencies(bt.created, bt.running)...)
				s.gone = append(s.gone, bt.latencies(bt.deleted, bt.gone)...)
				b.Logf("%s, %d pods, run %d: startup p50 %v p99 %v, deletion p50 %v p99 %v; the start took %v CPU of the agent, %v of the machine", a.name, size, run,
					percentile(s.start[len(s.start)-size:], 50), percentile(s.start[len(s.start)-size:], 99),
					percentile(s.gone[len(s.gone)-size:], 50), percentile(s.gone[len(s.gone)-size:], 99),
					s.agentCPU[len(s.agentCPU)-1], s.machineCPU[len(s.machineCPU)-1])
			}
		}
	}
	idles := measureIdle(b, c, client, agents)
	report(b, agents, lat, idles)
}

// measureIdle runs idlePods pods on every agent, lets them settle, then
// reads each agent's requests, CPU and PSS over one window, the same for all.
func measureIdle(b *testing.B, c *devcluster.Cluster, client kubernetes.Interface, agents []*agent) map[string]idle {
	var wg sync.WaitGroup
	for _, a := range agents {
		bt := newBatch(b, client, a.name+"-idle", a.node, idlePods)
		wg.Go(func() { bt.create(b) })
	}
	wg.Wait()
	time.Sleep(settle)
	before := map[string]usage{}
	for _, a := range agents {
		u, err := readUsage(a.processes())
		if err != nil {
			b.Fatalf("%s: %v", a.name, err)
		}
		before[a.name] = u
	}
	from := time.Now()
	// PSS is the mean of memorySamples reads over the window: microlet's
	// processes hold a few MB more during their bursts of work, and one
	// read met a burst or not by chance. The reads are e2e.SampleGap apart:
	// 10 s apart, they fell at one phase of the agents' 10-second work.
	sums := map[string]map[string]memory{} // by agent, by process
	var last map[string]usage
	for range memorySamples {
		time.Sleep(e2e.SampleGap(idleWindow, memorySamples))
		last = map[string]usage{}
		for _, a := range agents {
			u, err := readUsage(a.processes())
			if err != nil {
				b.Fatalf("%s: %v", a.name, err)
			}
			if sums[a.name] == nil {
				sums[a.name] = map[string]memory{}
			}
			for comm, m := range u.byProcess {
				sums[a.name][comm] = sums[a.name][comm].plus(m)
			}
			last[a.name] = u
		}
	}
	to := time.Now()
	out := map[string]idle{}
	for _, a := range agents {
		sum := total(sums[a.name])
		out[a.name] = idle{pssKB: sum.pssKB / memorySamples, anonKB: sum.anonKB / memorySamples,
			millicores: float64(last[a.name].cpu-before[a.name].cpu) / float64(to.Sub(from)) * 1000,
			processes:  processMeans(sums[a.name])}
	}
	// A request is logged once answered; give the last ones a moment.
	time.Sleep(2 * time.Second)
	for _, a := range agents {
		n, err := c.RequestCount(a.user(), from, to)
		if err != nil {
			b.Fatal(err)
		}
		i := out[a.name]
		i.requestsPerMinute = float64(n) / to.Sub(from).Minutes()
		out[a.name] = i
	}
	return out
}

// processMeans lists each process's mean PSS (anonymous) over the
// memorySamples reads summed in sums, largest first.
func processMeans(sums map[string]memory) string {
	comms := slices.Collect(maps.Keys(sums))
	slices.SortFunc(comms, func(a, b string) int { return cmp.Compare(sums[b].pssKB, sums[a].pssKB) })
	parts := make([]string, len(comms))
	for i, comm := range comms {
		parts[i] = fmt.Sprintf("%s %.1f MB (%.1f)", comm, float64(sums[comm].pssKB)/memorySamples/1024, float64(sums[comm].anonKB)/memorySamples/1024)
	}
	return strings.Join(parts, ", ")
}

// report prints the figures with the ratio microlet/kubelet and the
// targets, and reports the ratios as benchmark metrics.
func report(b *testing.B, agents []*agent, lat map[string]map[int]*samples, idles map[string]idle) {
	m, k := agents[0].name, agents[1].name
	var out strings.Builder
	w := tabwriter.NewWriter(&out, 0, 0, 2, ' ', 0)
	fmt.Fprintf(w, "figure\t%s\t%s\tratio\ttarget\n", m, k)
	for _, size := range sizes {
		lm, lk := lat[m][size], lat[k][size]
		for _, row := range []struct {
			what   string
			a, b   time.Duration
			target string
		}{
			{fmt.Sprintf("startup p50, %d pods", size), percentile(lm.start, 50), percentile(lk.start, 50), ""},
			{fmt.Sprintf("startup p99, %d pods", size), percentile(lm.start, 99), percentile(lk.start, 99), targetFor(size)},
			{fmt.Sprintf("deletion p50, %d pods", size), percentile(lm.gone, 50), percentile(lk.gone, 50), ""},
			{fmt.Sprintf("deletion p99, %d pods", size), percentile(lm.gone, 99), percentile(lk.gone, 99), ""},
		} {
			fmt.Fprintf(w, "%s\t%.2fs\t%.2fs\t%.2f\t%s\n", row.what, row.a.Seconds(), row.b.Seconds(), row.a.Seconds()/row.b.Seconds(), row.target)
		}
		fmt.Fprintf(w, "agent CPU per start, %d pods\t%.2fs\t%.2fs\t%.2f\t\n", size, sum(lm.agentCPU).Seconds()/float64(runs), sum(lk.agentCPU).Seconds()/float64(runs), sum(lm.agentCPU).Seconds()/sum(lk.agentCPU).Seconds())
		fmt.Fprintf(w, "machine CPU per start, %d pods\t%.2fs\t%.2fs\t%.2f\t\n", size, sum(lm.machineCPU).Seconds()/float64(runs), sum(lk.machineCPU).Seconds()/float64(runs), sum(lm.machineCPU).Seconds()/sum(lk.machineCPU).Seconds())
		b.ReportMetric(percentile(lm.start, 99).Seconds()/percentile(lk.start, 99).Seconds(), fmt.Sprintf("p99-startup-%d-ratio", size))
	}
	im, ik := idles[m], idles[k]
	fmt.Fprintf(w, "API requests/min, idle, %d pods\t%.1f\t%.1f\t%.2f\t<= 1\n", idlePods, im.requestsPerMinute, ik.requestsPerMinute, im.requestsPerMinute/ik.requestsPerMinute)
	fmt.Fprintf(w, "PSS, %d pods (anonymous)\t%.1f MB (%.1f)\t%.1f MB (%.1f)\t%.2f\t<= 0.7\n", idlePods,
		float64(im.pssKB)/1024, float64(im.anonKB)/1024, float64(ik.pssKB)/1024, float64(ik.anonKB)/1024, float64(im.pssKB)/float64(ik.pssKB))
	fmt.Fprintf(w, "idle CPU, %d pods\t%.1f m\t%.1f m\t%.2f\t<= 0.5\n", idlePods, im.millicores, ik.millicores, im.millicores/ik.millicores)
	w.Flush()
	b.ReportMetric(im.requestsPerMinute/ik.requestsPerMinute, "idle-requests-ratio")
	b.ReportMetric(float64(im.pssKB)/float64(ik.pssKB), "pss-ratio")
	b.ReportMetric(im.millicores/ik.millicores, "idle-cpu-ratio")
	fmt.Printf("\nmicrolet and kubelet v1.34 on one control plane (%d runs, latencies pooled):\n%s\n", runs, out.String())
	fmt.Printf("mean PSS (anonymous) by process, %d pods: %s: %s; %s: %s\n\n", idlePods, m, im.processes, k, ik.processes)
}

// targetFor is the startup target of a size: the kubelet's SLO at 30 pods.
func targetFor(size int) string {
	if size == 30 {
		return "<= 1 and <= 5 s"
	}
	return "<= 1"
}

// benchClient is an admin client that creates pods as fast as asked:
// client-go's default 5 requests a second would pace the batches.
func benchClient(b *testing.B, c *devcluster.Cluster) kubernetes.Interface {
	kubeconfig, err := c.Kubeconfig("bench-admin", "system:masters")
	if err != nil {
		b.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", kubeconfig)
	if err != nil {
		b.Fatal(err)
	}
	cfg.QPS, cfg.Burst = 500, 1000
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return client
}

// waitNodeReady waits until the Node is Ready.
func waitNodeReady(b *testing.B, client kubernetes.Interface, name string) {
	deadline := time.Now().Add(5 * time.Minute)
	for {
		node, err := client.CoreV1().Nodes().Get(context.Background(), name, metav1.GetOptions{})
		if err == nil {
			for _, c := range node.Status.Conditions {
				if c.Type == v1.NodeReady && c.Status == v1.ConditionTrue {
					return
				}
			}
		}
		if time.Now().After(deadline) {
			b.Fatalf("node %s not Ready after 5 minutes (%v)", name, err)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// cpu is CPU time used so far: the agent's processes', the machine's
// (every CPU's time not idle or waiting for I/O).
type cpu struct{ agent, machine time.Duration }

func cpuNow(b *testing.B, a *agent) cpu {
	u, err := readUsage(a.processes())
	if err != nil {
		b.Fatalf("%s: %v", a.name, err)
	}
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		b.Fatal(err)
	}
	st, err := fs.Stat()
	if err != nil {
		b.Fatal(err)
	}
	t := st.CPUTotal
	busy := t.User + t.Nice + t.System + t.IRQ + t.SoftIRQ + t.Steal
	return cpu{agent: u.cpu, machine: time.Duration(busy * float64(time.Second))}
}

func sum(ds []time.Duration) time.Duration {
	var total time.Duration
	for _, d := range ds {
		total += d
	}
	return total
}
