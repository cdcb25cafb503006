package handler

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/status"

	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
	"github.com/microlet/microlet/sdk/httpget"
)

// grpcProbe is upstream's grpc probe (pkg/probe/grpc): a grpc.health.v1
// Check of the service on the pod IP, over a plain-text connection; SERVING
// succeeds and everything else fails, with upstream's messages.
func grpcProbe(ctx context.Context, a *probesv1.GRPCAction, t Target, timeout time.Duration) (outcome, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	addr := net.JoinHostPort(t.PodIP, strconv.Itoa(int(a.GetPort())))
	conn, err := grpc.NewClient("passthrough:///"+addr,
		grpc.WithUserAgent(httpget.UserAgent("probe")), // as HTTP probes send it
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithContextDialer(func(ctx context.Context, addr string) (net.Conn, error) {
			return probeDialer().DialContext(ctx, "tcp", addr)
		}),
	)
	if err == nil {
		defer func() { _ = conn.Close() }()
		err = waitUntilReady(ctx, conn)
	}
	if errors.Is(err, context.DeadlineExceeded) {
		return failed(fmt.Sprintf("timeout: failed to connect service %q within %v: %+v", addr, timeout, err)), nil
	}
	if err != nil {
		return failed(fmt.Sprintf("error: failed to connect service at %q: %+v", addr, err)), nil
	}

	resp, err := healthpb.NewHealthClient(conn).Check(ctx, &healthpb.HealthCheckRequest{Service: a.GetService()})
	if err != nil {
		switch st, _ := status.FromError(err); st.Code() {
		case codes.Unimplemented:
			return failed(fmt.Sprintf("error: this server does not implement the grpc health protocol (grpc.health.v1.Health): %s", st.Message())), nil
		case codes.DeadlineExceeded:
			return failed(fmt.Sprintf("timeout: health rpc did not complete within %v", timeout)), nil
		}
		return failed(fmt.Sprintf("error: health rpc probe failed: %+v", err)), nil
	}
	if resp.GetStatus() != healthpb.HealthCheckResponse_SERVING {
		return failed(fmt.Sprintf("service unhealthy (responded with %q)", resp.GetStatus().String())), nil
	}
	return succeeded("service healthy"), nil
}

// waitUntilReady connects conn and waits until it is ready or ctx ends,
// through transient failures, as upstream's blocking dial does.
func waitUntilReady(ctx context.Context, conn *grpc.ClientConn) error {
	conn.Connect()
	for {
		state := conn.GetState()
		if state == connectivity.Ready {
			return nil
		}
		if !conn.WaitForStateChange(ctx, state) {
			return ctx.Err()
		}
	}
}
