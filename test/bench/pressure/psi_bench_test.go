//go:build e2e

package pressurebench

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	pressuree2e "github.com/microlet/microlet/test/e2e/pressure"
)

// BenchmarkPSIHog runs the e2e PSI scenario's hog (pressuree2e.PSIHog: a
// page cache thrash, then a burst past the pods' memory) BENCH_RUNS times
// (default 5; the figures are of 10) against each strategy, twice:
// without the kubelet's memory thresholds (what PSI alone adds, as the e2e
// test) and with the kubelet's default one (memory.available<100Mi, hence
// allocatableMemory.available<100Mi), which both strategies then apply.
// It reports OOM kills, evictions (and how many of them the psi strategy
// made for a stall rather than a kubelet threshold), and the time from the
// hog's push to its eviction (its status Evicted), median and worst.
func BenchmarkPSIHog(b *testing.B) {
	for _, mode := range []struct {
		name, body string
	}{
		{"thresholds=none", "hard = []"},
		// No transition period: MemoryPressure from one run must not
		// outlast it (the hog is Burstable besides, so admitted under it).
		{"thresholds=kubelet-default", "hard = [\"memory.available<100Mi\"]\npressure_transition_period = \"0s\""},
	} {
		for _, strategy := range []string{"kubelet", "psi"} {
			body := mode.body
			if strategy == "psi" {
				body += "\nmemory_pressure = []\npod_memory_pressure = [\"some.avg10>3\"]"
			}
			b.Run(mode.name+",strategy="+strategy, func(b *testing.B) {
				pressuree2e.RequirePodPSI(b)
				n := pressuree2e.Start(b, pressuree2e.Options{Plugins: []pressuree2e.Plugin{
					{Kind: "cgroup", Name: "default", Body: fmt.Sprintf("kube_reserved = { memory = \"%d\" }", pressuree2e.KubeReservedFor(b, pressuree2e.PSIPodsMemory))},
					{Kind: "eviction", Name: strategy, Body: body},
					{Kind: "imagegc", Name: "lru"},
					{Kind: "stats", Name: "default"},
				}})
				var oomKills, evictions int
				var toEviction []time.Duration
				for b.Loop() {
					for i := range runs {
						if d, evicted := hogRun(b, n, fmt.Sprintf("hog-%d", i)); evicted {
							evictions++
							toEviction = append(toEviction, d)
						} else {
							oomKills++
						}
					}
				}
				b.ReportMetric(0, "ns/op")
				b.ReportMetric(float64(oomKills), "oom-kills")
				b.ReportMetric(float64(evictions), "evictions")
				byStall, _ := n.Metric("kubelet_evictions", map[string]string{"eviction_signal": "memory.pressure"})
				b.ReportMetric(byStall, "evictions-for-stalls")
				if len(toEviction) > 0 {
					slices.Sort(toEviction)
					b.ReportMetric(toEviction[len(toEviction)/2].Seconds(), "p50-to-eviction-s")
					b.ReportMetric(toEviction[len(toEviction)-1].Seconds(), "max-to-eviction-s")
				}
				b.Logf("OOM kills %d, evictions %d, push to eviction: %v", oomKills, evictions, toEviction)
			})
		}
	}
}

// hogRun pushes one hog and waits until it failed: evicted, after how long
// from its push, or else OOM-killed.
func hogRun(b *testing.B, n *pressuree2e.Node, name string) (time.Duration, bool) {
	b.Helper()
	start := time.Now()
	n.Push(pressuree2e.PSIHog(name).Manifest())
	p := n.WaitPod(name, "failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	took := time.Since(start)
	evicted := pressuree2e.Evicted(p)
	switch {
	case evicted && strings.HasPrefix(p.Status.Message, "The node had condition"):
		b.Fatalf("%s was rejected at admission, not evicted: %s", name, pressuree2e.DescribePod(p))
	case !evicted && !pressuree2e.OOMKilled(p):
		b.Fatalf("%s failed, neither evicted nor OOM-killed: %s", name, pressuree2e.DescribePod(p))
	}
	n.WaitStopped(name)
	n.Delete(name)
	return took, evicted
}
