package cri

import (
	"context"
	"net"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// eventsMode is how the fake answers GetContainerEvents.
type eventsMode int

const (
	eventsUnimplemented eventsMode = iota // as containerd 1.6
	eventsSendOne                         // sends one event, then holds the stream open
	eventsSilent                          // holds the stream open without events
)

// fakeRuntime implements the RuntimeService calls the tests need; the rest
// answer Unimplemented.
type fakeRuntime struct {
	runtimeapi.UnimplementedRuntimeServiceServer

	mu         sync.Mutex
	apiVersion string
	conditions []*runtimeapi.RuntimeCondition
	events     eventsMode
	// deadlines records the time left on each call's deadline, by method.
	deadlines map[string]time.Duration
	// block makes ListPodSandbox wait until its caller gives up.
	block bool
}

func newFakeRuntime() *fakeRuntime {
	return &fakeRuntime{
		apiVersion: "v1",
		conditions: []*runtimeapi.RuntimeCondition{
			{Type: runtimeapi.RuntimeReady, Status: true},
			{Type: runtimeapi.NetworkReady, Status: true},
		},
		deadlines: map[string]time.Duration{},
	}
}

func (f *fakeRuntime) recordDeadline(ctx context.Context, method string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if deadline, ok := ctx.Deadline(); ok {
		f.deadlines[method] = time.Until(deadline)
	} else {
		f.deadlines[method] = -1
	}
}

func (f *fakeRuntime) deadline(method string) time.Duration {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.deadlines[method]
}

func (f *fakeRuntime) setConditions(runtimeReady, networkReady *runtimeapi.RuntimeCondition) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.conditions = []*runtimeapi.RuntimeCondition{runtimeReady, networkReady}
}

func (f *fakeRuntime) Version(context.Context, *runtimeapi.VersionRequest) (*runtimeapi.VersionResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &runtimeapi.VersionResponse{Version: "0.1.0", RuntimeName: "fake", RuntimeVersion: "1.0", RuntimeApiVersion: f.apiVersion}, nil
}

func (f *fakeRuntime) Status(context.Context, *runtimeapi.StatusRequest) (*runtimeapi.StatusResponse, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return &runtimeapi.StatusResponse{Status: &runtimeapi.RuntimeStatus{Conditions: f.conditions}}, nil
}

func (f *fakeRuntime) ListPodSandbox(ctx context.Context, _ *runtimeapi.ListPodSandboxRequest) (*runtimeapi.ListPodSandboxResponse, error) {
	f.recordDeadline(ctx, "ListPodSandbox")
	f.mu.Lock()
	block := f.block
	f.mu.Unlock()
	if block {
		<-ctx.Done()
		return nil, status.FromContextError(ctx.Err()).Err()
	}
	return &runtimeapi.ListPodSandboxResponse{Items: []*runtimeapi.PodSandbox{{Id: "sb1"}}}, nil
}

func (f *fakeRuntime) RunPodSandbox(ctx context.Context, _ *runtimeapi.RunPodSandboxRequest) (*runtimeapi.RunPodSandboxResponse, error) {
	f.recordDeadline(ctx, "RunPodSandbox")
	return &runtimeapi.RunPodSandboxResponse{PodSandboxId: "sb1"}, nil
}

func (f *fakeRuntime) StopContainer(ctx context.Context, _ *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	f.recordDeadline(ctx, "StopContainer")
	return &runtimeapi.StopContainerResponse{}, nil
}

func (f *fakeRuntime) StopPodSandbox(_ context.Context, req *runtimeapi.StopPodSandboxRequest) (*runtimeapi.StopPodSandboxResponse, error) {
	return nil, status.Errorf(codes.NotFound, "sandbox %s not found", req.PodSandboxId)
}

func (f *fakeRuntime) GetContainerEvents(_ *runtimeapi.GetEventsRequest, stream grpc.ServerStreamingServer[runtimeapi.ContainerEventResponse]) error {
	f.mu.Lock()
	mode := f.events
	f.mu.Unlock()
	switch mode {
	case eventsSendOne:
		if err := stream.Send(&runtimeapi.ContainerEventResponse{ContainerId: "c1", ContainerEventType: runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT}); err != nil {
			return err
		}
	case eventsUnimplemented:
		return status.Error(codes.Unimplemented, "method GetContainerEvents not implemented")
	}
	<-stream.Context().Done()
	return nil
}

// fakeImages implements the ImageService calls the tests need.
type fakeImages struct {
	runtimeapi.UnimplementedImageServiceServer
	runtime *fakeRuntime // records deadlines
}

func (f *fakeImages) ImageFsInfo(context.Context, *runtimeapi.ImageFsInfoRequest) (*runtimeapi.ImageFsInfoResponse, error) {
	return &runtimeapi.ImageFsInfoResponse{}, nil
}

func (f *fakeImages) PullImage(ctx context.Context, req *runtimeapi.PullImageRequest) (*runtimeapi.PullImageResponse, error) {
	f.runtime.recordDeadline(ctx, "PullImage")
	return &runtimeapi.PullImageResponse{ImageRef: "sha256:" + req.Image.Image}, nil
}

// fakeServer serves a fake runtime on a unix socket until stopped.
type fakeServer struct {
	t       *testing.T
	socket  string
	runtime *fakeRuntime
	server  *grpc.Server
}

// startFake serves rt on a new socket in a temporary directory.
func startFake(t *testing.T, rt *fakeRuntime) *fakeServer {
	t.Helper()
	s := &fakeServer{t: t, socket: filepath.Join(t.TempDir(), "cri.sock"), runtime: rt}
	s.start()
	t.Cleanup(s.stop)
	return s
}

func (s *fakeServer) start() {
	s.t.Helper()
	lis, err := net.Listen("unix", s.socket)
	if err != nil {
		s.t.Fatal(err)
	}
	s.server = grpc.NewServer()
	if s.runtime != nil {
		runtimeapi.RegisterRuntimeServiceServer(s.server, s.runtime)
		runtimeapi.RegisterImageServiceServer(s.server, &fakeImages{runtime: s.runtime})
	}
	go s.server.Serve(lis)
}

// stop ends the server and its connections; the socket file goes with it.
func (s *fakeServer) stop() {
	if s.server != nil {
		s.server.Stop()
		s.server = nil
	}
}

func (s *fakeServer) endpoint() string { return "unix://" + s.socket }

// connect connects a client to the fake with cfg's timeouts, closing it when
// the test ends.
func connect(t *testing.T, s *fakeServer, cfg Config) *Client {
	t.Helper()
	cfg.RuntimeEndpoint = s.endpoint()
	c, err := Connect(context.Background(), cfg, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
