package handler

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/metadata"

	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
	"github.com/microlet/microlet/sdk/httpget"
)

// grpcTarget serves gRPC on loopback, with the health service when health
// is set, and records the user agents of its callers.
func grpcTarget(t *testing.T, health *health.Server) (int32, func() []string) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var agents []string
	s := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		md, _ := metadata.FromIncomingContext(ctx)
		mu.Lock()
		agents = append(agents, md.Get("user-agent")...)
		mu.Unlock()
		return h(ctx, req)
	}))
	if health != nil {
		healthpb.RegisterHealthServer(s, health)
	}
	go func() { _ = s.Serve(l) }()
	t.Cleanup(s.Stop)
	return portOf(t, l.Addr().String()), func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), agents...)
	}
}

func TestGRPC(t *testing.T) {
	t.Parallel()
	h := health.NewServer()
	h.SetServingStatus("db", healthpb.HealthCheckResponse_NOT_SERVING)
	port, agents := grpcTarget(t, h)
	bare, _ := grpcTarget(t, nil)
	service := func(s string) *string { return &s }
	for _, c := range []struct {
		name   string
		action *probesv1.GRPCAction
		want   Outcome
	}{
		{"the server as a whole serves", &probesv1.GRPCAction{Port: port}, Outcome{Result: success, Output: "service healthy"}},
		{
			"a service not serving fails", &probesv1.GRPCAction{Port: port, Service: service("db")},
			Outcome{Result: failure, Output: `service unhealthy (responded with "NOT_SERVING")`},
		},
		{
			"an unknown service fails", &probesv1.GRPCAction{Port: port, Service: service("nope")},
			Outcome{Result: failure, Output: "error: health rpc probe failed: rpc error: code = NotFound desc = unknown service"},
		},
		{
			"a server without the health service fails", &probesv1.GRPCAction{Port: bare},
			Outcome{Result: failure, Output: "error: this server does not implement the grpc health protocol (grpc.health.v1.Health): unknown service grpc.health.v1.Health"},
		},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			if got := NewRunner(nil).Run(t.Context(), probeWith(c.action), Target{PodIP: "127.0.0.1"}); got != c.want {
				t.Errorf("Run = %+v\nwant  %+v", got, c.want)
			}
		})
	}
	t.Run("user agent", func(t *testing.T) {
		NewRunner(nil).Run(t.Context(), probeWith(&probesv1.GRPCAction{Port: port}), Target{PodIP: "127.0.0.1"})
		for _, a := range agents() {
			if ua := httpget.UserAgent("probe"); !strings.HasPrefix(a, ua+" ") {
				t.Errorf("user agent %q; want %q first, as upstream", a, ua)
			}
		}
		if len(agents()) == 0 {
			t.Error("no call reached the server")
		}
	})
}

// A port nothing listens on is retried until the timeout, as upstream's
// blocking dial does.
func TestGRPCUnreachable(t *testing.T) {
	t.Parallel()
	port := closedPort(t)
	got := NewRunner(nil).Run(t.Context(), probeWith(&probesv1.GRPCAction{Port: port}), Target{PodIP: "127.0.0.1"})
	want := fmt.Sprintf(`timeout: failed to connect service "127.0.0.1:%d" within 1s: context deadline exceeded`, port)
	if got != (Outcome{Result: failure, Output: want}) {
		t.Errorf("Run against a closed port = %+v; want failure %q", got, want)
	}
}
