package pluginhost

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"

	basev1 "github.com/microlet/microlet/proto/microlet/base/v1"
	statsv1 "github.com/microlet/microlet/proto/microlet/stats/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

type observedPlugin struct {
	basev1.UnimplementedPluginServiceServer
	statsv1.UnimplementedStatsServiceServer
}

func (observedPlugin) GetIdentity(context.Context, *basev1.GetIdentityRequest) (*basev1.GetIdentityResponse, error) {
	return &basev1.GetIdentityResponse{Kind: "stats", Name: "fake"}, nil
}

func (observedPlugin) GetSummary(_ *statsv1.GetSummaryRequest, s grpc.ServerStreamingServer[statsv1.GetSummaryResponse]) error {
	return s.Send(&statsv1.GetSummaryResponse{Item: &statsv1.GetSummaryResponse_Node{Node: &typesv1.NodeStats{}}})
}

// TestCallObserver: unary calls are reported when answered, streams when
// they end, each with the slot's kind and name and the method.
func TestCallObserver(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	basev1.RegisterPluginServiceServer(srv, observedPlugin{})
	statsv1.RegisterStatsServiceServer(srv, observedPlugin{})
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)

	var mu sync.Mutex
	var calls []FinishedCall
	record := func(c FinishedCall) {
		mu.Lock()
		defer mu.Unlock()
		calls = append(calls, c)
	}
	opts := append([]grpc.DialOption{grpc.WithTransportCredentials(insecure.NewCredentials())}, callObserver(record, "stats", "fake")...)
	conn, err := grpc.NewClient(ln.Addr().String(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })

	ctx := context.Background()
	if _, err := basev1.NewPluginServiceClient(conn).GetIdentity(ctx, &basev1.GetIdentityRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, err := basev1.NewPluginServiceClient(conn).GetCapabilities(ctx, &basev1.GetCapabilitiesRequest{}); status.Code(err) != codes.Unimplemented {
		t.Fatalf("GetCapabilities: %v", err)
	}
	stream, err := statsv1.NewStatsServiceClient(conn).GetSummary(ctx, &statsv1.GetSummaryRequest{})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	if len(calls) != 2 {
		t.Errorf("%d calls reported before the stream ended, want 2", len(calls))
	}
	mu.Unlock()
	for {
		if _, err := stream.Recv(); err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatal(err)
			}
			break
		}
	}
	stream.Recv() // a second end is not reported again

	mu.Lock()
	defer mu.Unlock()
	want := []string{
		"/microlet.base.v1.PluginService/GetIdentity",
		"/microlet.base.v1.PluginService/GetCapabilities", // a failed call counts too
		"/microlet.stats.v1.StatsService/GetSummary",
	}
	if len(calls) != len(want) {
		t.Fatalf("calls %+v, want %d", calls, len(want))
	}
	for i, w := range want {
		c := calls[i]
		if c.Kind != "stats" || c.Name != "fake" || c.Method != w || c.Duration <= 0 {
			t.Errorf("call %d = %+v, want %s", i, c, w)
		}
	}
}
