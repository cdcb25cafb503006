//go:build e2e

// Package pressurebench measures how fast the node reacts to memory
// pressure: from the moment the pods' memory crosses the eviction threshold
// (read from the kubepods cgroup, polled every few milliseconds by the
// benchmark) to the moment the offending pod's container has stopped (seen
// through CRI), on the real microlet binary and a private containerd. It
// runs with the kernel's memory notifications on, then off (periodic cycle
// only), and reports the median, the 90th and 99th percentiles and the
// worst of a few runs each. The crossing is the kubepods cgroup's working
// set (usage less inactive file) passing the level, which is what
// allocatableMemory.available is computed from (upstream's "pods" system
// container).
//
// A third mode recreates issue 18's lost notification: before each run,
// page cache that no listed pod owns (a file written from a cgroup under
// kubepods that is then removed, as a deleted pod's cache is) is charged to
// kubepods. A level placed from the pods' own stats, which leave that cache
// out, is passed one step of the hog before the threshold is met: the cycle
// that notification starts finds nothing to do, and the kernel says nothing
// at the real crossing. BENCH_RUNS sets the number of runs of each mode
// (default 5; the issue asks 50 for a p99).
package pressurebench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubelettypes "k8s.io/kubelet/pkg/types"

	pressuree2e "github.com/microlet/microlet/test/e2e/pressure"
)

// runs per mode; each is one eviction.
var runs = envRuns()

const (
	// Pods may use podsMemory; the hard threshold holds back threshold, so
	// allocatableMemory.available<threshold is met once the pods' working
	// sets pass podsMemory - 2*threshold.
	podsMemory = 700 * pressuree2e.Mi
	threshold  = 300 * pressuree2e.Mi
	crossing   = podsMemory - 2*threshold
	// monitoringInterval is the eviction manager's period (the default).
	monitoringInterval = 10 * time.Second
	// memoryPoll and stopPoll are how often the benchmark looks.
	memoryPoll = 2 * time.Millisecond
	stopPoll   = 5 * time.Millisecond
)

func TestMain(m *testing.M) { os.Exit(pressuree2e.Main(m)) }

func BenchmarkMemoryPressureReaction(b *testing.B) {
	for _, mode := range []struct {
		notify, foreign bool
	}{{true, false}, {false, false}, {true, true}} {
		name := fmt.Sprintf("kernel_memcg_notification=%t", mode.notify)
		if mode.foreign {
			name += ",foreign_cache"
		}
		notify := mode.notify
		b.Run(name, func(b *testing.B) {
			n := pressuree2e.Start(b, pressuree2e.Options{
				Plugins: []pressuree2e.Plugin{
					{Kind: "cgroup", Name: "default", Body: fmt.Sprintf("kube_reserved = { memory = \"%d\" }", pressuree2e.KubeReservedFor(b, podsMemory))},
					{Kind: "eviction", Name: "kubelet", Body: fmt.Sprintf("hard = [\"memory.available<%d\"]\npressure_transition_period = \"0s\"", threshold)},
					// Image GC by usage off: on a shared disk past 85 %
					// it removed the hogs' image between runs.
					{Kind: "imagegc", Name: "lru", Body: "high_threshold_percent = 100"},
					{Kind: "stats", Name: "default"},
				},
				Settings: map[string]string{"kernel_memcg_notification": strconv.FormatBool(notify)},
			})
			kubepods := n.KubepodsMemory()
			var reactions []time.Duration
			for b.Loop() {
				for i := range runs {
					if mode.foreign {
						kubepods.ChargeForeignCache(pressuree2e.ForeignCache)
					}
					reactions = append(reactions, react(b, n, kubepods, fmt.Sprintf("hog-%d", i)))
				}
			}
			slices.Sort(reactions)
			b.ReportMetric(0, "ns/op")
			b.ReportMetric(reactions[len(reactions)/2].Seconds(), "p50-s")
			b.ReportMetric(percentile(reactions, 90).Seconds(), "p90-s")
			b.ReportMetric(percentile(reactions, 99).Seconds(), "p99-s")
			b.ReportMetric(reactions[len(reactions)-1].Seconds(), "max-s")
			b.Logf("reactions: %v", reactions)
		})
	}
}

// percentile is the p-th percentile of sorted durations: the smallest that
// at least p % of them do not exceed (of 50, the 99th is the largest).
func percentile(sorted []time.Duration, p int) time.Duration {
	return sorted[(len(sorted)*p+99)/100-1]
}

// react runs one eviction: a hog fills a memory-backed emptyDir in 20Mi
// steps up to 200Mi, past the crossing at 100Mi; it returns the time from
// the crossing to its container's stop.
func react(b *testing.B, n *pressuree2e.Node, kubepods *pressuree2e.CgroupMemory, name string) time.Duration {
	b.Helper()
	n.Eventually("the pods' memory is below the threshold", func() (bool, string) {
		ws := kubepods.WorkingSet()
		return ws < crossing/2, fmt.Sprintf("kubepods working set %d", ws)
	})
	// Each run waits for the last eviction, which a periodic cycle may have
	// made; a random pause puts the next crossing anywhere in the period
	// instead of always just after a tick.
	time.Sleep(rand.N(monitoringInterval))
	crossed := make(chan time.Time, 1)
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	go func() {
		for ctx.Err() == nil {
			if kubepods.WorkingSet() > crossing {
				crossed <- time.Now()
				return
			}
			time.Sleep(memoryPoll)
		}
	}()
	// Burstable, so that it is admitted while MemoryPressure still holds
	// from the last run.
	hog := pressuree2e.PodSpec{Name: name, Script: pressuree2e.FillScript(pressuree2e.HogStepMi, 10, "0.05"), MemoryRequest: "8Mi", MemoryVolume: true}
	n.Push(hog.Manifest())
	stopped := waitStopped(b, n, name+"-"+pressuree2e.NodeName)
	var at time.Time
	select {
	case at = <-crossed:
	default:
		b.Fatalf("%s stopped before its memory crossed the threshold", name)
	}
	if p := n.Pod(name); p == nil || !pressuree2e.Evicted(p) {
		b.Fatalf("%s stopped, but was not evicted: %v", name, p)
	}
	// The next run, or the node's removal, must not race the teardown.
	n.WaitStopped(name)
	n.Delete(name)
	// Wall-clock times, to place a slow run in microlet's log (-v).
	b.Logf("%s: crossed %s, stopped %s: %v", name, at.UTC().Format(time.StampMilli), stopped.UTC().Format(time.StampMilli), stopped.Sub(at))
	return stopped.Sub(at)
}

// waitStopped polls the runtime until the pod's container has exited and
// returns when it saw it.
func waitStopped(b *testing.B, n *pressuree2e.Node, podName string) time.Time {
	b.Helper()
	deadline := time.Now().Add(pressuree2e.WaitTimeout)
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp, err := n.CRI.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
			LabelSelector: map[string]string{kubelettypes.KubernetesPodNameLabel: podName},
		}})
		cancel()
		if err != nil {
			b.Fatalf("ListContainers: %v", err)
		}
		for _, c := range resp.Containers {
			if c.State == runtimeapi.ContainerState_CONTAINER_EXITED {
				return time.Now()
			}
		}
		time.Sleep(stopPoll)
	}
	b.Fatalf("pod %s's container did not stop within %v", podName, pressuree2e.WaitTimeout)
	return time.Time{}
}

// envRuns is BENCH_RUNS, or 5.
func envRuns() int {
	v, ok := os.LookupEnv("BENCH_RUNS")
	if !ok {
		return 5
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		panic(fmt.Sprintf("BENCH_RUNS=%q: want a whole number of at least 1", v))
	}
	return n
}
