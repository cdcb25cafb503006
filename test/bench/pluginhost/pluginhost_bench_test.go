//go:build e2e

// Package pluginhostbench measures core/pluginhost against real plugin
// processes: call round trip, cold start, crash to serving, hot swap, and
// the memory of idle plugins and of a core that only hosts them.
//
// Each benchmark takes at least a fixed number of samples whatever b.N is
// (so `-benchtime 1x` still yields percentiles) and reports them with
// b.ReportMetric; ns/op is the mean of the samples b.N asked for.
package pluginhostbench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/microlet/microlet/core/config"
	"github.com/microlet/microlet/core/pluginhost"
	"github.com/microlet/microlet/internal/e2e"
	"github.com/microlet/microlet/internal/lastresort"
	pluginhoste2e "github.com/microlet/microlet/test/e2e/pluginhost"
	"github.com/microlet/microlet/test/testplugins/smaps"
)

var bins *pluginhoste2e.Binaries

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "microlet-benchbin-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	bins, err = pluginhoste2e.Build(dir)
	code := 1
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
	} else {
		stop := lastresort.Watch()
		code = m.Run()
		stop()
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

var spec = pluginhost.Spec{Kind: "eviction", Name: "alpha"}

// quietHost is a host on a fresh plugin directory holding the v1 test
// plugin, logging at level to the benchmark's log. Fields set in opts win.
func quietHost(b *testing.B, level hclog.Level, opts pluginhost.Options) (*pluginhost.Host, string) {
	dir := pluginhoste2e.PluginDir(b)
	pluginhoste2e.Install(b, bins.Plugin, dir, spec.BinaryName())
	// The defaults, not the tests' fast ones.
	defaults := config.Defaults().PluginHost
	if opts.HealthInterval == 0 {
		opts.HealthInterval = defaults.HealthInterval
	}
	if opts.HealthTimeout == 0 {
		opts.HealthTimeout = defaults.HealthTimeout
	}
	opts.Logger = hclog.New(&hclog.LoggerOptions{Name: "bench", Level: level, Output: pluginhoste2e.LogWriter{T: b}})
	return pluginhoste2e.NewHost(b, dir, opts), dir
}

// collect takes max(b.N, min) samples; the timer runs for the last b.N.
func collect(b *testing.B, min int, sample func() time.Duration) []time.Duration {
	n := max(b.N, min)
	out := make([]time.Duration, 0, n)
	b.StopTimer()
	for range n - b.N {
		out = append(out, sample())
	}
	var timed time.Duration
	b.StartTimer()
	for range b.N {
		d := sample()
		timed += d
		out = append(out, d)
	}
	b.StopTimer()
	b.ReportMetric(float64(timed.Nanoseconds())/float64(b.N), "ns/op")
	return out
}

// percentile of sorted samples, p in [0, 100].
func percentile(sorted []time.Duration, p float64) time.Duration {
	return sorted[min(len(sorted)-1, int(float64(len(sorted))*p/100))]
}

func reportPercentiles(b *testing.B, samples []time.Duration, unit time.Duration, unitName string, ps ...float64) {
	slices.Sort(samples)
	for _, p := range ps {
		b.ReportMetric(float64(percentile(samples, p))/float64(unit), fmt.Sprintf("p%g-%s", p, unitName))
	}
}

// withGOMAXPROCS runs the caller at procs Ps for the rest of the benchmark.
func withGOMAXPROCS(b *testing.B, procs int) {
	previous := runtime.GOMAXPROCS(procs)
	b.Cleanup(func() { runtime.GOMAXPROCS(previous) })
}

// BenchmarkCallRoundTrip: GetIdentity through a pluginhost.Client to a
// real plugin process, with the caller at 1 P (the core's default) and at
// 2, and at 1 P with the caller and the plugin on one CPU.
//
// On a VM, a call's two wake-ups (the plugin's, then the caller's) cost
// what the hypervisor takes to wake an idle vCPU unless the guest polls
// before halting (cpuidle-haltpoll's guest_halt_poll_ns, which the
// benchmark logs). On one CPU neither side waits for an idle vCPU, so
// that run measures the software alone.
func BenchmarkCallRoundTrip(b *testing.B) {
	if poll, err := os.ReadFile("/sys/module/haltpoll/parameters/guest_halt_poll_ns"); err == nil {
		// Printed, not logged: a parent benchmark's log is not shown.
		fmt.Printf("guest_halt_poll_ns: %s\n", strings.TrimSpace(string(poll)))
	}
	for _, run := range []struct {
		procs  int
		oneCPU bool
	}{{1, false}, {2, false}, {1, true}} {
		name := fmt.Sprintf("gomaxprocs=%d", run.procs)
		if run.oneCPU {
			name += "/one-cpu"
		}
		b.Run(name, func(b *testing.B) {
			withGOMAXPROCS(b, run.procs)
			if run.oneCPU {
				onOneCPU(b)
			}
			host, _ := quietHost(b, hclog.Error, pluginhost.Options{})
			if err := host.Reconcile(context.Background(), []pluginhost.Spec{spec}); err != nil {
				b.Fatal(err)
			}
			slot := host.Plugin("eviction")
			ctx := context.Background()
			call := func() time.Duration {
				start := time.Now()
				if _, err := pluginhoste2e.GetIdentity(ctx, slot); err != nil {
					b.Fatal(err)
				}
				return time.Since(start)
			}
			for range 500 { // warm up connections, caches
				call()
			}
			reportPercentiles(b, collect(b, 5000, call), time.Microsecond, "µs", 50, 99)
		})
	}
}

// onOneCPU pins every thread of the benchmark, and so the plugin processes
// it starts (they inherit the affinity), to its first allowed CPU until the
// benchmark ends. Affinity is per thread: new threads inherit it from the
// thread that makes them, so pinning the existing ones pins the process.
func onOneCPU(b *testing.B) {
	var all, one unix.CPUSet
	if err := unix.SchedGetaffinity(0, &all); err != nil {
		b.Fatal(err)
	}
	for cpu := range 1024 {
		if all.IsSet(cpu) {
			one.Set(cpu)
			break
		}
	}
	pinThreads(b, &one)
	b.Cleanup(func() { pinThreads(b, &all) })
}

func pinThreads(b *testing.B, set *unix.CPUSet) {
	// Twice: a thread made during the first pass by a thread not yet
	// pinned is caught by the second.
	for range 2 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			b.Fatal(err)
		}
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			if err := unix.SchedSetaffinity(tid, set); err != nil && !errors.Is(err, unix.ESRCH) {
				b.Fatalf("pin thread %d: %v", tid, err)
			}
		}
	}
}

// BenchmarkColdStart: from Reconcile of a new plugin to its first answered
// call: trust checks and hash, exec, handshake, identity, configure,
// health check, first call.
func BenchmarkColdStart(b *testing.B) {
	withGOMAXPROCS(b, 1)
	host, _ := quietHost(b, hclog.Error, pluginhost.Options{})
	ctx := context.Background()
	samples := collect(b, 20, func() time.Duration {
		start := time.Now()
		if err := host.Reconcile(ctx, []pluginhost.Spec{spec}); err != nil {
			b.Fatal(err)
		}
		if _, err := pluginhoste2e.GetIdentity(ctx, host.Plugin("eviction")); err != nil {
			b.Fatal(err)
		}
		d := time.Since(start)
		if err := host.Reconcile(ctx, nil); err != nil {
			b.Fatal(err)
		}
		return d
	})
	reportPercentiles(b, samples, time.Millisecond, "ms", 50, 90)
}

// BenchmarkCrashToServing: SIGKILL the plugin, then call until a new
// process answers. The first restart of a crash loop is immediate; the
// backoff settings make every restart here a first one, so no backoff wait
// is measured.
func BenchmarkCrashToServing(b *testing.B) {
	withGOMAXPROCS(b, 1)
	// Off: go-plugin logs every kill as an error.
	host, _ := quietHost(b, hclog.Off, pluginhost.Options{
		RestartBackoff:    time.Microsecond,
		RestartBackoffMax: time.Microsecond,
		RestartBudget:     1 << 20,
	})
	ctx := context.Background()
	if err := host.Reconcile(ctx, []pluginhost.Spec{spec}); err != nil {
		b.Fatal(err)
	}
	slot := host.Plugin("eviction")
	samples := collect(b, 20, func() time.Duration {
		pid := slot.Status().PID
		start := time.Now()
		if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
			b.Fatal(err)
		}
		for {
			if _, err := pluginhoste2e.GetIdentity(ctx, slot); err == nil && slot.Status().PID != pid {
				break
			}
			time.Sleep(100 * time.Microsecond)
		}
		return time.Since(start)
	})
	reportPercentiles(b, samples, time.Millisecond, "ms", 50, 90)
}

// BenchmarkHotSwap: replace the binary by rename while a loop of calls
// runs. swap-ms is from the rename to the first call the new version
// answers (including the watcher's debounce); switch-ms is the host's own
// part, from the new launch to the switch. No call may fail.
func BenchmarkHotSwap(b *testing.B) {
	withGOMAXPROCS(b, 1)
	var switches []time.Duration
	var mu sync.Mutex
	host, dir := quietHost(b, hclog.Error, pluginhost.Options{WatchDir: true, OnEvent: func(e pluginhost.Event) {
		if e.Type == pluginhost.EventSwapped {
			mu.Lock()
			switches = append(switches, e.Duration)
			mu.Unlock()
		}
	}})
	ctx := context.Background()
	if err := host.Reconcile(ctx, []pluginhost.Spec{spec}); err != nil {
		b.Fatal(err)
	}
	slot := host.Plugin("eviction")

	var failed atomic.Int64
	var version atomic.Value // the version of the latest answer
	stop := make(chan struct{})
	loopDone := make(chan struct{})
	go func() {
		defer close(loopDone)
		for {
			select {
			case <-stop:
				return
			default:
			}
			id, err := pluginhoste2e.GetIdentity(ctx, slot)
			if err != nil {
				failed.Add(1)
				continue
			}
			version.Store(id.GetPluginVersion())
		}
	}()
	binaries := map[string]string{"1.0.0": bins.PluginV2, "2.0.0": bins.Plugin}
	versionOf := map[string]string{bins.Plugin: "1.0.0", bins.PluginV2: "2.0.0"}
	samples := collect(b, 5, func() time.Duration {
		old := slot.Status()
		next := binaries[old.PluginVersion]
		start := time.Now()
		pluginhoste2e.Install(b, next, dir, spec.BinaryName())
		for version.Load() != versionOf[next] {
			time.Sleep(100 * time.Microsecond)
		}
		d := time.Since(start)
		for !e2e.ProcessGone(old.PID) { // let the retired process go before the next sample
			time.Sleep(time.Millisecond)
		}
		return d
	})
	close(stop)
	<-loopDone
	reportPercentiles(b, samples, time.Millisecond, "swap-ms", 50)
	mu.Lock()
	reportPercentiles(b, switches, time.Millisecond, "switch-ms", 50)
	mu.Unlock()
	b.ReportMetric(float64(failed.Load()), "failed-calls")
	if failed.Load() != 0 {
		b.Errorf("%d calls failed during swaps, want 0", failed.Load())
	}
}

// BenchmarkIdleMemory: a core that only hosts three plugins (testcore).
// Plugins report their memory as configured, before the SDK releases its
// start-up memory; after 10 s of idling with health pings the benchmark
// reads the plugins' and the core's. Plugin figures are per plugin,
// averaged. All from /proc/<pid>/smaps_rollup.
func BenchmarkIdleMemory(b *testing.B) {
	dir := pluginhoste2e.PluginDir(b)
	plugins := []string{"eviction/alpha", "devices/gpu-a", "devices/gpu-b"}
	for _, p := range plugins {
		pluginhoste2e.Install(b, bins.Plugin, dir, "microlet-"+strings.Replace(p, "/", "-", 1))
	}
	for range b.N {
		core := pluginhoste2e.StartCore(b, bins.Core, dir, plugins...)
		var configured [][2]int64
		pluginhoste2e.Eventually(b, 5*time.Second, "every plugin logged its memory as configured", func() bool {
			configured = configuredMemory(core.Log.String())
			return len(configured) == len(plugins)
		})
		reportMean(b, "plugin", "configured", configured)
		time.Sleep(10 * time.Second)
		var idle [][2]int64
		for _, pid := range core.Plugins {
			idle = append(idle, rollup(b, pid))
		}
		reportMean(b, "plugin", "idle", idle)
		reportMean(b, "core", "idle", [][2]int64{rollup(b, core.Cmd.Process.Pid)})
		core.Cmd.Process.Signal(syscall.SIGTERM)
		core.Cmd.Wait()
	}
}

var (
	rssKB = regexp.MustCompile(`\brss_kb=(\d+)`)
	pssKB = regexp.MustCompile(`\bpss_kb=(\d+)`)
)

// configuredMemory returns the {rss, pss} in KB each test plugin logged in
// its "configured" line (key order varies: go-plugin re-emits JSON fields).
func configuredMemory(log string) [][2]int64 {
	var out [][2]int64
	for _, line := range strings.Split(log, "\n") {
		if !strings.Contains(line, ": configured:") {
			continue
		}
		rss, pss := rssKB.FindStringSubmatch(line), pssKB.FindStringSubmatch(line)
		if rss == nil || pss == nil {
			continue
		}
		r, _ := strconv.ParseInt(rss[1], 10, 64) // the patterns match digits only
		p, _ := strconv.ParseInt(pss[1], 10, 64)
		out = append(out, [2]int64{r, p})
	}
	return out
}

func rollup(b *testing.B, pid int) [2]int64 {
	mem, err := smaps.Rollup(strconv.Itoa(pid))
	if err != nil {
		b.Fatal(err)
	}
	return [2]int64{mem.RssKB, mem.PssKB}
}

// reportMean reports the mean RSS and PSS of {rss, pss} samples in KB.
func reportMean(b *testing.B, who, when string, samples [][2]int64) {
	var rss, pss int64
	for _, s := range samples {
		rss += s[0]
		pss += s[1]
	}
	n := float64(len(samples))
	b.ReportMetric(float64(rss)/n, fmt.Sprintf("%s-rss-KB-%s", who, when))
	b.ReportMetric(float64(pss)/n, fmt.Sprintf("%s-pss-KB-%s", who, when))
}
