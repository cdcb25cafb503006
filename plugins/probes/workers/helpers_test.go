package workers

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

	"google.golang.org/protobuf/types/known/timestamppb"

	hostv1 "github.com/microlet/microlet/proto/microlet/host/v1"
	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk/sdktest"
)

const (
	liveness  = probesv1.ProbeType_PROBE_TYPE_LIVENESS
	readiness = probesv1.ProbeType_PROBE_TYPE_READINESS
	startup   = probesv1.ProbeType_PROBE_TYPE_STARTUP

	none    = probesv1.Result_RESULT_UNSPECIFIED
	success = probesv1.Result_RESULT_SUCCESS
	failure = probesv1.Result_RESULT_FAILURE
)

// resultWait bounds how long a test waits for a result it expects; probes
// run every second, so it only ends a test that is broken.
const resultWait = 30 * time.Second

// fakeHost is the core's host service: ExecSync answers each container
// with its scripted exit codes in turn, the last one for ever.
type fakeHost struct {
	hostv1.UnimplementedHostServiceServer

	mu    sync.Mutex
	exits map[string][]int32
	calls map[string]int
}

func newFakeHost(exits map[string][]int32) *fakeHost {
	return &fakeHost{exits: exits, calls: map[string]int{}}
}

func (f *fakeHost) ExecSync(_ context.Context, req *hostv1.ExecSyncRequest) (*hostv1.ExecSyncResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	exits := f.exits[req.GetContainerId()]
	if len(exits) == 0 {
		return nil, fmt.Errorf("no such container %q", req.GetContainerId())
	}
	code := exits[min(f.calls[req.GetContainerId()], len(exits)-1)]
	f.calls[req.GetContainerId()]++
	return &hostv1.ExecSyncResponse{ExitCode: code, Stdout: []byte(fmt.Sprintf("exit %d", code))}, nil
}

func (f *fakeHost) execCalls(containerID string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[containerID]
}

// target is a loopback HTTP server: /ready answers 200.
func target(t *testing.T) int32 {
	return serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/ready" {
			http.NotFound(w, r)
		}
	}))
}

// serveHTTP serves handler on a loopback port for the test and returns
// the port.
func serveHTTP(t *testing.T, handler http.Handler) int32 {
	s := httptest.NewServer(handler)
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

// serve runs the plugin in process with host as its host service, configured.
func serve(t *testing.T, host *fakeHost) *sdktest.Harness {
	h := sdktest.InProcess(t, Info, New(), sdktest.WithHostService(host))
	if err := h.Configure(map[string]any{}); err != nil {
		t.Fatalf("Configure: %v", err)
	}
	return h
}

// probe is a probe with handler h, run every second.
func probe(h any, failureThreshold int32) *probesv1.Probe {
	p := &probesv1.Probe{TimeoutSeconds: 1, PeriodSeconds: 1, SuccessThreshold: 1, FailureThreshold: failureThreshold}
	switch h := h.(type) {
	case *probesv1.ExecAction:
		p.Handler = &probesv1.Probe_Exec{Exec: h}
	case *probesv1.HTTPGetAction:
		p.Handler = &probesv1.Probe_HttpGet{HttpGet: h}
	case *probesv1.TCPSocketAction:
		p.Handler = &probesv1.Probe_TcpSocket{TcpSocket: h}
	}
	return p
}

func execProbe(failureThreshold int32) *probesv1.Probe {
	return probe(&probesv1.ExecAction{Command: []string{"check"}}, failureThreshold)
}

func httpProbe(port int32) *probesv1.Probe {
	return probe(&probesv1.HTTPGetAction{Path: "/ready", PortName: "web"}, 3)
}

// containerProbes is a container of pod "default/web" on loopback, its
// port "web" being port.
func containerProbes(id string, port int32) *probesv1.ContainerProbes {
	return &probesv1.ContainerProbes{
		PodUid: "uid-1", PodNamespace: "default", PodName: "web", ContainerName: "app-" + id, ContainerId: id,
		PodIp: "127.0.0.1", Ports: []*typesv1.ContainerPort{{Name: "web", ContainerPort: port, Protocol: "TCP"}},
		StartedAt: timestamppb.Now(),
	}
}

// watcher reads a WatchResults stream in the background.
type watcher struct {
	results chan *probesv1.ProbeResult
	errs    chan error
}

func openWatch(t *testing.T, client probesv1.ProbesServiceClient) *watcher {
	ctx, cancel := context.WithCancel(context.Background())
	stream, err := client.WatchResults(ctx, &probesv1.WatchResultsRequest{})
	if err != nil {
		cancel()
		t.Fatalf("WatchResults: %v", err)
	}
	w := &watcher{results: make(chan *probesv1.ProbeResult, 1024), errs: make(chan error, 1)}
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			resp, err := stream.Recv()
			if err != nil {
				w.errs <- err
				return
			}
			select {
			case w.results <- resp.GetResult():
			case <-ctx.Done():
				return
			}
		}
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return w
}

// next returns the results up to and including the first that matches.
func (w *watcher) next(t *testing.T, what string, match func(*probesv1.ProbeResult) bool) []*probesv1.ProbeResult {
	t.Helper()
	var seen []*probesv1.ProbeResult
	timeout := time.After(resultWait)
	for {
		select {
		case r := <-w.results:
			seen = append(seen, r)
			if match(r) {
				return seen
			}
		case err := <-w.errs:
			t.Fatalf("waiting for %s: the stream ended: %v", what, err)
		case <-timeout:
			t.Fatalf("no %s within %v; saw %v", what, resultWait, seen)
		}
	}
}

// of matches a result of a container's probe that settled a verdict.
func of(containerID string, kind probesv1.ProbeType, settled probesv1.Result) func(*probesv1.ProbeResult) bool {
	return func(r *probesv1.ProbeResult) bool {
		return r.GetContainerId() == containerID && r.GetProbeType() == kind && r.GetResult() == settled
	}
}
