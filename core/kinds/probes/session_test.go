package probes

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/pluginhost"
	"github.com/microlet/microlet/core/runtime/container"
	"github.com/microlet/microlet/plugins/probes/workers"
	hostv1 "github.com/microlet/microlet/proto/microlet/host/v1"
	"github.com/microlet/microlet/sdk/sdktest"
)

// updateWait bounds how long a test waits for an update it expects; probes
// run every second, so it only ends a test that is broken.
const updateWait = 30 * time.Second

// testSlot hands out leases on an in-process plugin, as the plugin host
// does on its processes: retire ends the leases (Done) and serves none
// until serve hands it the next plugin.
type testSlot struct {
	mu       sync.Mutex
	conn     *grpc.ClientConn
	done     chan struct{}
	leases   int
	releases int
}

func (s *testSlot) Acquire(context.Context) (*pluginhost.Lease, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.conn == nil {
		return nil, fmt.Errorf("%w: the test's plugin is stopped", pluginhost.ErrUnavailable)
	}
	s.leases++
	var once sync.Once
	return &pluginhost.Lease{Conn: s.conn, Done: s.done, Release: func() {
		once.Do(func() {
			s.mu.Lock()
			s.releases++
			s.mu.Unlock()
		})
	}}, nil
}

func (s *testSlot) serve(h *sdktest.Harness) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.conn, s.done = h.Conn(), make(chan struct{})
}

func (s *testSlot) retire() {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.done)
	s.conn = nil
}

func (s *testSlot) counts() (leases, releases int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.leases, s.releases
}

// execHost is the core's host service for the plugin: ExecSync exits 0
// for containers in succeed, 1 for the others, and counts the calls.
type execHost struct {
	hostv1.UnimplementedHostServiceServer
	succeed map[string]bool

	mu    sync.Mutex
	calls map[string]int
}

func (h *execHost) ExecSync(_ context.Context, req *hostv1.ExecSyncRequest) (*hostv1.ExecSyncResponse, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.calls[req.GetContainerId()]++
	if h.succeed[req.GetContainerId()] {
		return &hostv1.ExecSyncResponse{}, nil
	}
	return &hostv1.ExecSyncResponse{ExitCode: 1, Stderr: []byte("not alive")}, nil
}

func (h *execHost) execCalls(id string) int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.calls[id]
}

// startPlugin serves the default probes plugin in process.
func startPlugin(t *testing.T, host *execHost) *sdktest.Harness {
	h := sdktest.InProcess(t, workers.Info, workers.New(), sdktest.WithHostService(host))
	if err := h.Configure(map[string]any{}); err != nil {
		t.Fatalf("Configure: %v", err)
	}
	return h
}

// readyServer is a loopback HTTP server whose /ready answers 200.
func readyServer(t *testing.T) int32 {
	s := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ready" {
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(s.Close)
	_, port, err := net.SplitHostPort(s.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	n, err := strconv.Atoi(port)
	if err != nil {
		t.Fatal(err)
	}
	return int32(n)
}

// run runs m until the test ends.
func run(t *testing.T, m *Manager) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// loopbackRuntime is runtimeOf with the pod on loopback.
func loopbackRuntime(pod *v1.Pod, running ...string) *container.PodStatus {
	rt := runtimeOf(pod, running...)
	rt.Sandboxes[0].IPs = []string{"127.0.0.1"}
	return rt
}

// waitFor reads updates until one matches, and returns those read.
func waitFor(t *testing.T, m *Manager, want Update) []Update {
	t.Helper()
	var seen []Update
	timeout := time.After(updateWait)
	for {
		select {
		case u := <-m.Updates():
			seen = append(seen, u)
			if u == want {
				return seen
			}
		case <-timeout:
			t.Fatalf("no update %+v within %v; saw %v", want, updateWait, seen)
		}
	}
}

func probeCount(m *Manager, probeType, result string) float64 {
	return testutil.ToFloat64(m.metrics.total.WithLabelValues(probeType, result, "app", "web", "default", "uid-1"))
}

// The plugin's verdicts reach the cache, the loop's updates and the
// metrics: readiness turns ready, a failing liveness probe asks for a
// restart with its grace period.
func TestResultsFlow(t *testing.T) {
	t.Parallel()
	port := readyServer(t)
	host := &execHost{calls: map[string]int{}}
	slot := &testSlot{}
	slot.serve(startPlugin(t, host))
	m := newManager(t, Options{Plugin: slot, Registerer: prometheus.NewRegistry()})
	run(t, m)

	grace := int64(3)
	liveness := execProbe("check")
	liveness.FailureThreshold, liveness.PeriodSeconds, liveness.TerminationGracePeriodSeconds = 2, 1, &grace
	readiness := httpReadiness()
	readiness.PeriodSeconds = 1
	pod := newPod("1", v1.Container{Name: "app", Image: "app", Ports: []v1.ContainerPort{{Name: "web", ContainerPort: port}},
		ReadinessProbe: readiness, LivenessProbe: liveness})
	m.UpdatePod(pod, loopbackRuntime(pod, "app"))

	waitFor(t, m, Update{PodUID: pod.UID, ContainerID: "app-1", Type: Readiness, Result: Success})
	if ready, known := m.Ready("app-1"); !ready || !known {
		t.Errorf("Ready after the readiness update = %v, %v", ready, known)
	}
	waitFor(t, m, Update{PodUID: pod.UID, ContainerID: "app-1", Type: Liveness, Result: Failure})
	if restart, message, g := m.ShouldRestart("app-1"); !restart || message != "Container app failed liveness probe" || g == nil || *g != grace {
		t.Errorf("ShouldRestart after the liveness failure = %v, %q, %v; want true, upstream's message, grace %d", restart, message, g, grace)
	}
	if n := probeCount(m, "Liveness", "failed"); n != 2 {
		t.Errorf("prober_probe_total of failed liveness attempts = %v, want 2 (failure threshold 2, then the probe stops)", n)
	}
	if n := probeCount(m, "Readiness", "successful"); n < 1 {
		t.Errorf("prober_probe_total of successful readiness attempts = %v, want at least 1", n)
	}

	// The pod goes: the plugin stops probing it, the cache forgets it.
	m.RemovePod(pod.UID)
	if _, known := m.Ready("app-1"); known {
		t.Error("app-1 still known after RemovePod")
	}
}

// While the plugin is away every verdict stays; the next process gets the
// whole set, changes made meanwhile included, without the startup probe of
// a container that has started; its verdicts then flow, and none of its
// initial values overrides a kept verdict.
func TestSwapKeepsVerdictsAndResyncs(t *testing.T) {
	t.Parallel()
	port := readyServer(t)
	host := &execHost{succeed: map[string]bool{"app-1": true}, calls: map[string]int{}}
	slot := &testSlot{}
	first := startPlugin(t, host)
	slot.serve(first)
	m := newManager(t, Options{Plugin: slot, Registerer: prometheus.NewRegistry()})
	run(t, m)

	ports := []v1.ContainerPort{{Name: "web", ContainerPort: port}}
	startup := execProbe("started")
	startup.PeriodSeconds = 1
	readiness := httpReadiness()
	readiness.PeriodSeconds, readiness.SuccessThreshold = 1, 3
	pod := newPod("1",
		v1.Container{Name: "app", Image: "app", Ports: ports, StartupProbe: startup, ReadinessProbe: readiness},
		v1.Container{Name: "late", Image: "late", Ports: ports, ReadinessProbe: readiness})
	m.UpdatePod(pod, loopbackRuntime(pod, "app"))
	waitFor(t, m, Update{PodUID: pod.UID, ContainerID: "app-1", Type: Startup, Result: Success})
	waitFor(t, m, Update{PodUID: pod.UID, ContainerID: "app-1", Type: Readiness, Result: Success})
	startupRuns := host.execCalls("app-1")

	// The plugin goes away, as in a swap: its lease ends, it shuts down,
	// and no process serves for a while.
	slot.retire()
	if err := first.Shutdown(); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
	if ready, known := m.Ready("app-1"); !ready || !known || !m.Started("app-1") {
		t.Errorf("during the outage Ready(app-1) = %v, %v, Started = %v; want the kept verdicts", ready, known, m.Started("app-1"))
	}
	// A container starts meanwhile.
	m.UpdatePod(pod, loopbackRuntime(pod, "app", "late"))
	if ready, _ := m.Ready("late-1"); ready {
		t.Error("a container started during the outage is ready before any probe ran")
	}

	slot.serve(startPlugin(t, host))
	seen := waitFor(t, m, Update{PodUID: pod.UID, ContainerID: "late-1", Type: Readiness, Result: Success})
	// Three readiness attempts of the new process (success threshold 3)
	// have run; so would have app-1's readiness, and a startup probe sent
	// again would have run too.
	for _, u := range seen {
		if u.ContainerID == "app-1" {
			t.Errorf("update %+v across the swap; want app-1's verdicts kept", u)
		}
	}
	if ready, _ := m.Ready("app-1"); !ready {
		t.Error("app-1 turned unready across the swap")
	}
	if n := host.execCalls("app-1"); n != startupRuns {
		t.Errorf("the startup probe ran %d more times after the swap; want none: it had succeeded", n-startupRuns)
	}
	if leases, releases := slot.counts(); leases < 2 || releases < 1 {
		t.Errorf("%d leases, %d released; want a lease per process and the first one released", leases, releases)
	}
}

// Without a plugin, Run waits for its context and containers have no
// probes.
func TestWithoutPlugin(t *testing.T) {
	var none *pluginhost.Plugin // Host.Plugin("probes") with no probes plugin configured
	m := newManager(t, Options{Plugin: none})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		m.Run(ctx)
	}()
	pod := newPod("1", v1.Container{Name: "app", Image: "app", LivenessProbe: execProbe("false"), ReadinessProbe: execProbe("false")})
	m.UpdatePod(pod, runtimeOf(pod, "app"))
	if ready, known := m.Ready("app-1"); !ready || !known {
		t.Errorf("Ready without a plugin = %v, %v; want a running container ready", ready, known)
	}
	if restart, _, _ := m.ShouldRestart("app-1"); restart {
		t.Error("ShouldRestart without a plugin")
	}
	cancel()
	<-done
}
