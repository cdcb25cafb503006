package strategy

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/microlet/microlet/plugins/eviction/priority"
	basev1 "github.com/microlet/microlet/proto/microlet/base/v1"
	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/evictionengine"
	"github.com/microlet/microlet/sdk/evictionengine/kubelet"
	"github.com/microlet/microlet/sdk/transport"
)

var (
	_ sdk.Plugin[evictionengine.Config] = (*Plugin[evictionengine.Config])(nil)
	_ sdk.EvictionStrategy              = (*Plugin[evictionengine.Config])(nil)
	_ sdk.EvictionAdmitter              = (*Plugin[evictionengine.Config])(nil)
	_ sdk.NodeReserver                  = (*Plugin[evictionengine.Config])(nil)
)

// serve runs a plugin in-process over go-plugin's gRPC transport, as the
// plugin binaries serve it, and returns the core's end of the connection.
func serve[C any](t *testing.T, name string, p sdk.Plugin[C]) *grpc.ClientConn {
	t.Helper()
	gp, err := sdk.NewGRPCPlugin(sdk.Info{Kind: sdk.KindEviction, Name: name, Version: "0.0.0"}, p, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	client, server := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{transport.PluginName: gp})
	t.Cleanup(func() {
		client.Close()
		server.Stop()
	})
	return client.Conn
}

func config(t *testing.T, m map[string]any) *structpb.Struct {
	t.Helper()
	s, err := structpb.NewStruct(m)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestKubeletPluginOverTheWire(t *testing.T) {
	ctx := context.Background()
	conn := serve[evictionengine.Config](t, "kubelet", New(kubelet.New))
	base, eviction := basev1.NewPluginServiceClient(conn), evictionv1.NewEvictionServiceClient(conn)

	// The SDK may refuse the call itself; either way it must fail cleanly.
	if _, err := eviction.Synchronize(ctx, &evictionv1.SynchronizeRequest{}); status.Code(err) != codes.Unavailable && status.Code(err) != codes.FailedPrecondition {
		t.Errorf("Synchronize before Configure: %v, want Unavailable or FailedPrecondition", err)
	}

	caps, err := base.GetCapabilities(ctx, &basev1.GetCapabilitiesRequest{})
	if err != nil || !slices.Contains(caps.GetCapabilities(), sdk.CapabilityEvictionAdmit) || !slices.Contains(caps.GetCapabilities(), sdk.CapabilityEvictionReservation) {
		t.Errorf("capabilities = %v, %v", caps.GetCapabilities(), err)
	}

	bad, err := base.ValidateConfig(ctx, &basev1.ValidateConfigRequest{Config: config(t, map[string]any{
		"hard": []any{"memory.available<1Gi", "memory.free<1Gi"},
		"soft": []any{"nodefs.available<20%"},
	})})
	if err != nil {
		t.Fatal(err)
	}
	var paths []string
	for _, e := range bad.GetErrors() {
		paths = append(paths, e.GetPath())
	}
	if !slices.Equal(paths, []string{"hard", "soft_grace_period"}) {
		t.Errorf("ValidateConfig errors = %v, want one for hard and one for soft_grace_period", bad.GetErrors())
	}

	good := config(t, map[string]any{
		"hard":                       []any{"memory.available<1Gi"},
		"soft":                       []any{"memory.available<2Gi"},
		"soft_grace_period":          []any{"memory.available=1m"},
		"max_pod_grace_period":       "30s",
		"minimum_reclaim":            []any{"memory.available=100Mi"},
		"pressure_transition_period": "1m",
	})
	if _, err := base.Configure(ctx, &basev1.ConfigureRequest{Config: good}); err != nil {
		t.Fatalf("Configure: %v", err)
	}

	now := time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)
	u := func(v uint64) *uint64 { return &v }
	i := func(v int64) *int64 { return &v }
	resp, err := eviction.Synchronize(ctx, &evictionv1.SynchronizeRequest{
		Now:       timestamppb.New(now),
		Node:      &typesv1.Node{Capacity: &typesv1.ResourceList{MemoryBytes: i(8 << 30)}},
		NodeStats: &typesv1.NodeStats{Memory: &typesv1.MemoryStats{Time: timestamppb.New(now), WorkingSetBytes: u(7<<30 + 512<<20)}},
		Pods:      []*typesv1.Pod{{Uid: "a", Name: "a", QosClass: "BestEffort"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.GetEvictions()) != 1 || resp.GetEvictions()[0].GetPodUid() != "a" || len(resp.GetState()) == 0 {
		t.Errorf("Synchronize = %v", resp)
	}

	admit, err := eviction.Admit(ctx, &evictionv1.AdmitRequest{Pod: &typesv1.Pod{QosClass: "BestEffort"}, Conditions: resp.GetConditions()})
	if err != nil || admit.GetAdmit() || admit.GetReason() != "Evicted" {
		t.Errorf("Admit = %v, %v", admit, err)
	}
	reserved, err := eviction.GetNodeReservation(ctx, &evictionv1.GetNodeReservationRequest{Capacity: &typesv1.ResourceList{MemoryBytes: i(8 << 30)}})
	if err != nil || reserved.GetReserved().GetMemoryBytes() != 1<<30 {
		t.Errorf("GetNodeReservation = %v, %v", reserved, err)
	}
}

func TestPriorityPluginConfig(t *testing.T) {
	ctx := context.Background()
	base := basev1.NewPluginServiceClient(serve[priority.Config](t, "priority", New(priority.New)))

	resp, err := base.ValidateConfig(ctx, &basev1.ValidateConfigRequest{Config: config(t, map[string]any{
		"protect_min_age": "-1h",
	})})
	if err != nil || len(resp.GetErrors()) != 1 || resp.GetErrors()[0].GetPath() != "protect_min_age" {
		t.Errorf("ValidateConfig(protect_min_age = -1h) = %v, %v", resp.GetErrors(), err)
	}
	resp, err = base.ValidateConfig(ctx, &basev1.ValidateConfigRequest{Config: config(t, map[string]any{"protect_min_age_typo": "1h"})})
	if err != nil || len(resp.GetErrors()) != 1 {
		t.Errorf("ValidateConfig(unknown key) = %v, %v", resp.GetErrors(), err)
	}
	if _, err := base.Configure(ctx, &basev1.ConfigureRequest{Config: config(t, map[string]any{
		"protect_min_age":    "1h",
		"hard":               []any{"memory.available<500Mi"},
		"merge_default_hard": true,
	})}); err != nil {
		t.Errorf("Configure: %v", err)
	}
}
