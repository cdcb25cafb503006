//go:build e2e

package nodebench

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/microlet/microlet/internal/e2e"
	"github.com/microlet/microlet/internal/freeport"
)

// callsSettle is how long after its pods run an agent's calls are read a
// second time: what it does for a start after the containers run (status
// reads, the relists that see the start) counts as much as what came
// before.
const callsSettle = 5 * time.Second

// BenchmarkCRICalls counts the CRI calls the kubelet and microlet make,
// by method, to start the same batch of pods (the node benchmark's) on
// private containerds of their own: from each agent's
// kubelet_runtime_operations_total before the manifests are written, once
// every container runs and again callsSettle later. Calls made meanwhile
// for no one pod (each relist's listing, runtime status polls) count too:
// the runtime serves them during the start. The counts depend on the
// machine's load far less than start times do (a relist that finds a pod
// half made reads it once more), and every call an agent makes beyond the
// kubelet's costs the runtime CPU that a start on a saturated machine
// waits for (issue 18). It prints calls per pod for
// each method and reports the totals as metrics. BENCH_BASELINE_BIN_DIR
// adds another build of microlet (before a change), counted in the same
// run.
//
//	make build && E2E_BIN_DIR=$PWD/_output/bin BENCH_SIZES=30 \
//	  go test -run '^$' -bench CRICalls -benchtime 1x -tags e2e -timeout 30m ./test/bench/node/
func BenchmarkCRICalls(b *testing.B) {
	type agent struct {
		name    string
		sys     system
		metrics string
	}
	k := runKubelet(b, kubeletStartTimeout, nil)
	// The kubelet's server lets anyone in (devnode.StartKubelet); its
	// certificate is self-signed.
	agents := []agent{{"kubelet", k, "https://" + k.k.ServerAddress + "/metrics"}}
	builds := [][2]string{{"microlet", os.Getenv(e2e.EnvDir)}}
	if dir := os.Getenv(envBaselineBin); dir != "" {
		builds = append(builds, [2]string{"baseline", dir})
	}
	for _, build := range builds {
		ports, err := freeport.Ports(1)
		if err != nil {
			b.Fatal(err)
		}
		m := runMicrolet(b, build[0], microletBinaries(b, build[1]), fmt.Sprintf("read_only_port = %d", ports[0]))
		agents = append(agents, agent{build[0], m, fmt.Sprintf("http://127.0.0.1:%d/metrics", ports[0])})
	}
	time.Sleep(warmUp)
	b.ReportMetric(0, "ns/op")
	for _, size := range batchSizes {
		var counts []callCounts
		for _, a := range agents {
			c := callCounts{agent: a.name, pods: size}
			pods := newBatch(size, 0)
			rt := a.sys.devnode().RuntimeClient()
			before := readCalls(b, a.metrics)
			timed(b, rt, size, a.sys.starter, pods)
			c.running = readCalls(b, a.metrics).minus(before)
			time.Sleep(callsSettle)
			c.settled = readCalls(b, a.metrics).minus(before)
			timed(b, rt, 0, a.sys.stopper, pods)
			if err := waitNoPods(context.Background(), rt); err != nil {
				b.Fatalf("%s: %v", a.name, err)
			}
			time.Sleep(settle)
			counts = append(counts, c)
			b.ReportMetric(c.settled.total()/float64(size), fmt.Sprintf("%s-n%d-calls/pod", a.name, size))
		}
		printCalls(os.Stdout, counts)
	}
}

// calls are an agent's CRI calls by operation_type.
type calls map[string]float64

func (c calls) minus(before calls) calls {
	out := calls{}
	for op, n := range c {
		if d := n - before[op]; d != 0 {
			out[op] = d
		}
	}
	return out
}

func (c calls) total() float64 {
	var sum float64
	for _, n := range c {
		sum += n
	}
	return sum
}

// callCounts are one agent's calls for one start of pods pods: when its
// containers all ran, and callsSettle later.
type callCounts struct {
	agent            string
	pods             int
	running, settled calls
}

// readCalls reads kubelet_runtime_operations_total from an agent's
// /metrics.
func readCalls(b *testing.B, url string) calls {
	client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, //nolint:gosec // the devnode kubelet's self-signed certificate, on loopback
	}}
	resp, err := client.Get(url)
	if err != nil {
		b.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		b.Fatalf("GET %s: %s: %s", url, resp.Status, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		b.Fatalf("GET %s: %v", url, err)
	}
	family, ok := families["kubelet_runtime_operations_total"]
	if !ok {
		b.Fatalf("GET %s: no kubelet_runtime_operations_total", url)
	}
	out := calls{}
	for _, m := range family.GetMetric() {
		for _, l := range m.GetLabel() {
			if l.GetName() == "operation_type" {
				out[l.GetValue()] += m.GetCounter().GetValue()
			}
		}
	}
	return out
}

// printCalls writes each agent's calls per pod by method, at running and
// settled, one column pair per agent.
func printCalls(out io.Writer, counts []callCounts) {
	var ops []string
	for _, c := range counts {
		for op := range c.settled {
			if !slices.Contains(ops, op) {
				ops = append(ops, op)
			}
		}
	}
	slices.Sort(ops)
	w := tabwriter.NewWriter(out, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := []string{fmt.Sprintf("CRI calls per pod, start of %d pods", counts[0].pods)}
	for _, c := range counts {
		header = append(header, c.agent+" running", fmt.Sprintf("%s +%v", c.agent, callsSettle))
	}
	fmt.Fprintf(w, "\n%s\t\n", strings.Join(header, "\t"))
	row := func(name string, value func(calls) float64) {
		cells := []string{name}
		for _, c := range counts {
			cells = append(cells, fmt.Sprintf("%.2f", value(c.running)/float64(c.pods)), fmt.Sprintf("%.2f", value(c.settled)/float64(c.pods)))
		}
		fmt.Fprintf(w, "%s\t\n", strings.Join(cells, "\t"))
	}
	for _, op := range ops {
		row(op, func(c calls) float64 { return c[op] })
	}
	row("total", calls.total)
	w.Flush()
}
