package cri

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestGRPCTarget(t *testing.T) {
	tests := []struct {
		endpoint string
		want     string
		wantErr  string
	}{
		{endpoint: "unix:///run/containerd/containerd.sock", want: "unix:///run/containerd/containerd.sock"},
		{endpoint: "/run/crio/crio.sock", want: "unix:///run/crio/crio.sock"},
		{endpoint: "tcp://127.0.0.1:1234", wantErr: `scheme "tcp" is not supported`},
		{endpoint: "run/containerd.sock", wantErr: "expected an absolute socket path"},
		{endpoint: "unix://relative.sock", wantErr: "expected an absolute socket path"},
	}
	for _, tt := range tests {
		t.Run(tt.endpoint, func(t *testing.T) {
			got, err := grpcTarget(tt.endpoint)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), tt.endpoint) {
					t.Errorf("error %v; want one naming %q and saying %q", err, tt.endpoint, tt.wantErr)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Errorf("target %q, %v; want %q", got, err, tt.want)
			}
		})
	}
}

func TestConnectChecksVersion(t *testing.T) {
	tests := []struct {
		name       string
		apiVersion string
		noServices bool
		wantErr    string
	}{
		{name: "v1", apiVersion: "v1"},
		{name: "older CRI", apiVersion: "v1alpha2", wantErr: `speaks CRI "v1alpha2"; microlet needs "v1"`},
		{name: "no CRI v1 service", noServices: true, wantErr: "does not serve CRI v1 (runtime.v1.RuntimeService)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := newFakeRuntime()
			rt.apiVersion = tt.apiVersion
			if tt.noServices {
				rt = nil
			}
			s := startFake(t, rt)
			c, err := Connect(context.Background(), Config{RuntimeEndpoint: s.endpoint(), ConnectTimeout: 10 * time.Second}, hclog.NewNullLogger())
			if tt.wantErr == "" {
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if v := c.RuntimeVersion(); v.RuntimeName != "fake" || v.RuntimeApiVersion != "v1" {
					t.Errorf("version %v", v)
				}
				return
			}
			if err == nil {
				c.Close()
				t.Fatal("connected; want an error")
			}
			if !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), s.endpoint()) {
				t.Errorf("error %q; want it to name %s and say %q", err, s.endpoint(), tt.wantErr)
			}
		})
	}
}

func TestConnectWaitsForRuntime(t *testing.T) {
	s := &fakeServer{t: t, socket: filepath.Join(t.TempDir(), "cri.sock"), runtime: newFakeRuntime()}
	t.Cleanup(s.stop)
	type result struct {
		c   *Client
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := Connect(context.Background(), Config{RuntimeEndpoint: s.endpoint(), ConnectTimeout: 20 * time.Second}, hclog.NewNullLogger())
		done <- result{c, err}
	}()
	s.start() // the runtime comes up after the client started waiting
	r := <-done
	if r.err != nil {
		t.Fatal(r.err)
	}
	r.c.Close()
}

func TestConnectGivesUp(t *testing.T) {
	endpoint := "unix://" + filepath.Join(t.TempDir(), "absent.sock")
	tests := []struct {
		name    string
		cfg     Config
		ctx     func() (context.Context, context.CancelFunc)
		wantErr string
	}{
		{
			name:    "connect timeout",
			cfg:     Config{RuntimeEndpoint: endpoint, ConnectTimeout: 200 * time.Millisecond},
			ctx:     func() (context.Context, context.CancelFunc) { return context.Background(), func() {} },
			wantErr: "did not answer within 200ms",
		},
		{
			name: "caller's deadline",
			cfg:  Config{RuntimeEndpoint: endpoint, ConnectTimeout: time.Hour},
			ctx: func() (context.Context, context.CancelFunc) {
				return context.WithTimeout(context.Background(), 200*time.Millisecond)
			},
			wantErr: "did not answer",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := tt.ctx()
			defer cancel()
			c, err := Connect(ctx, tt.cfg, hclog.NewNullLogger())
			if err == nil {
				c.Close()
				t.Fatal("connected to nothing")
			}
			if !strings.Contains(err.Error(), tt.wantErr) || !strings.Contains(err.Error(), endpoint) {
				t.Errorf("error %q; want it to name %s and say %q", err, endpoint, tt.wantErr)
			}
		})
	}
}

func TestCallDeadlines(t *testing.T) {
	rt := newFakeRuntime()
	s := startFake(t, rt)
	c := connect(t, s, Config{RequestTimeout: time.Hour, ImagePullTimeout: 10 * time.Hour})
	ctx := context.Background()

	if _, err := c.ListPodSandbox(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := c.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{}, ""); err != nil {
		t.Fatal(err)
	}
	if err := c.StopContainer(ctx, "c1", 3600); err != nil {
		t.Fatal(err)
	}
	if _, err := c.PullImage(ctx, &runtimeapi.ImageSpec{Image: "localhost/pause:1"}, nil, nil); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if _, err := c.ListPodSandbox(short, nil); err != nil {
		t.Fatal(err)
	}
	shortList := rt.deadline("ListPodSandbox")

	// The server sees the deadline a little after it was set; the bounds
	// leave minutes of slack, so they only tell which timeout applied.
	tests := []struct {
		call     string
		left     time.Duration
		min, max time.Duration
	}{
		{"RunPodSandbox (twice the request timeout)", rt.deadline("RunPodSandbox"), 119 * time.Minute, 120 * time.Minute},
		{"StopContainer (grace period plus request timeout)", rt.deadline("StopContainer"), 119 * time.Minute, 120 * time.Minute},
		{"PullImage (image pull timeout)", rt.deadline("PullImage"), 599 * time.Minute, 600 * time.Minute},
		{"ListPodSandbox under a shorter caller deadline", shortList, 0, time.Minute},
	}
	for _, tt := range tests {
		if tt.left <= tt.min || tt.left > tt.max {
			t.Errorf("%s: the server saw %s left; want between %s and %s", tt.call, tt.left, tt.min, tt.max)
		}
	}
}

func TestCallTimesOut(t *testing.T) {
	rt := newFakeRuntime()
	rt.block = true
	s := startFake(t, rt)
	c := connect(t, s, Config{RequestTimeout: 100 * time.Millisecond})
	_, err := c.ListPodSandbox(context.Background(), nil)
	if status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("error %v (%s); want DeadlineExceeded", err, status.Code(err))
	}
	if !strings.Contains(err.Error(), "CRI ListPodSandbox: no answer from "+s.endpoint()) {
		t.Errorf("error %q does not name the call and the endpoint", err)
	}
}

func TestErrorsNameCallAndObject(t *testing.T) {
	s := startFake(t, newFakeRuntime())
	c := connect(t, s, Config{})
	err := c.StopPodSandbox(context.Background(), "sb-42")
	if status.Code(err) != codes.NotFound {
		t.Fatalf("error %v; want NotFound kept", err)
	}
	if want := `CRI StopPodSandbox "sb-42": rpc error: code = NotFound desc = sandbox sb-42 not found`; err.Error() != want {
		t.Errorf("error %q; want %q", err, want)
	}
}

func TestRecoversWhenRuntimeReturns(t *testing.T) {
	s := startFake(t, newFakeRuntime())
	c := connect(t, s, Config{RequestTimeout: time.Hour})
	if _, err := c.ListPodSandbox(context.Background(), nil); err != nil {
		t.Fatal(err)
	}

	s.stop()
	// While the runtime is away calls fail at once with Unavailable rather
	// than wait for it; the generous deadline only guards against a hang.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := c.ListPodSandbox(ctx, nil)
	if status.Code(err) != codes.Unavailable {
		t.Fatalf("call during the outage: %v (%s); want Unavailable", err, status.Code(err))
	}
	if !strings.Contains(err.Error(), "the container runtime at "+s.endpoint()+" is unavailable") {
		t.Errorf("error %q does not say the runtime is unavailable", err)
	}

	s.start()
	for {
		_, err := c.ListPodSandbox(ctx, nil)
		if err == nil {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the client did not recover after the runtime came back: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func TestEventsSupport(t *testing.T) {
	tests := []struct {
		name string
		mode eventsMode
		want bool
	}{
		{"unimplemented, as containerd 1.6", eventsUnimplemented, false},
		{"streams events", eventsSendOne, true},
		{"open stream without events", eventsSilent, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rt := newFakeRuntime()
			rt.events = tt.mode
			s := startFake(t, rt)
			c := connect(t, s, Config{EventsProbeTimeout: 300 * time.Millisecond})
			if got := c.SupportsEvents(); got != tt.want {
				t.Errorf("SupportsEvents() = %v; want %v", got, tt.want)
			}
		})
	}
}

func TestContainerEvents(t *testing.T) {
	rt := newFakeRuntime()
	rt.events = eventsSendOne
	s := startFake(t, rt)
	c := connect(t, s, Config{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := c.ContainerEvents(ctx)
	if err != nil {
		t.Fatal(err)
	}
	event, err := stream.Recv()
	if err != nil {
		t.Fatal(err)
	}
	if event.ContainerId != "c1" || event.ContainerEventType != runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT {
		t.Errorf("event %v", event)
	}

	// A runtime that turns out not to stream events clears SupportsEvents.
	rt.mu.Lock()
	rt.events = eventsUnimplemented
	rt.mu.Unlock()
	stream, err = c.ContainerEvents(ctx)
	if err == nil {
		_, err = stream.Recv()
	}
	if status.Code(err) != codes.Unimplemented {
		t.Fatalf("error %v; want Unimplemented", err)
	}
	if c.SupportsEvents() {
		t.Error("SupportsEvents() still true after Unimplemented")
	}
}
