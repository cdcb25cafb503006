package lru

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin"
	"google.golang.org/protobuf/types/known/structpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	basev1 "github.com/microlet/microlet/proto/microlet/base/v1"
	imagegcv1 "github.com/microlet/microlet/proto/microlet/imagegc/v1"
	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/transport"
)

var (
	_ sdk.Plugin[Config]     = (*Plugin)(nil)
	_ sdk.ImageCollector     = (*Plugin)(nil)
	_ sdk.ContainerCollector = (*Plugin)(nil)
)

// The plugin over go-plugin's gRPC transport, as the binary serves it: the
// config keys decode, and both planners answer their streams.
func TestPluginOverTheWire(t *testing.T) {
	ctx := context.Background()
	gp, err := sdk.NewGRPCPlugin(sdk.Info{Kind: sdk.KindImageGC, Name: "lru", Version: "0.0.0"}, &Plugin{}, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	client, server := plugin.TestPluginGRPCConn(t, false, map[string]plugin.Plugin{transport.PluginName: gp})
	t.Cleanup(func() {
		client.Close()
		server.Stop()
	})
	base, gc := basev1.NewPluginServiceClient(client.Conn), imagegcv1.NewImageGCServiceClient(client.Conn)

	bad, err := structpb.NewStruct(map[string]any{"high_threshold_percent": 70, "low_threshold_percent": 75})
	if err != nil {
		t.Fatal(err)
	}
	if resp, err := base.ValidateConfig(ctx, &basev1.ValidateConfigRequest{Config: bad}); err != nil || len(resp.GetErrors()) != 1 || resp.GetErrors()[0].GetPath() != "low_threshold_percent" {
		t.Errorf("ValidateConfig(low above high) = %v, %v", resp.GetErrors(), err)
	}
	good, err := structpb.NewStruct(map[string]any{
		"high_threshold_percent": 90, "low_threshold_percent": 70, "minimum_age": "1m", "maximum_age": "24h",
		"container_minimum_age": "10s", "max_per_pod_container": 2, "max_containers": 100,
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := base.Configure(ctx, &basev1.ConfigureRequest{Config: good}); err != nil {
		t.Fatalf("Configure: %v", err)
	}

	images, err := gc.PlanImageGC(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, item := range []*imagegcv1.PlanImageGCRequest{
		{Item: &imagegcv1.PlanImageGCRequest_Context{Context: &imagegcv1.ImageGCContext{Now: timestamppb.New(now), BytesToFree: 1}}},
		{Item: &imagegcv1.PlanImageGCRequest_Image{Image: image("young", Gi, 30*time.Second, -1)}},
		{Item: &imagegcv1.PlanImageGCRequest_Image{Image: image("old", Gi, time.Hour, -1)}},
	} {
		if err := images.Send(item); err != nil {
			t.Fatal(err)
		}
	}
	plan, err := images.CloseAndRecv()
	if err != nil || !slices.Equal(plan.GetRemoveImageIds(), []string{"old"}) {
		t.Errorf("PlanImageGC = %v, %v; want [old]: minimum_age 1m keeps the young one", plan, err)
	}

	containers, err := gc.PlanContainerGC(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, item := range []*imagegcv1.PlanContainerGCRequest{
		{Item: &imagegcv1.PlanContainerGCRequest_Context{Context: &imagegcv1.ContainerGCContext{Now: timestamppb.New(now)}}},
		{Item: &imagegcv1.PlanContainerGCRequest_Container{Container: dead("a-1", "p", "a", 3*time.Minute)}},
		{Item: &imagegcv1.PlanContainerGCRequest_Container{Container: dead("a-2", "p", "a", 2*time.Minute)}},
		{Item: &imagegcv1.PlanContainerGCRequest_Container{Container: dead("a-3", "p", "a", time.Minute)}},
		{Item: &imagegcv1.PlanContainerGCRequest_Sandbox{Sandbox: sandbox("sb-old", "p", time.Hour, 0)}},
		{Item: &imagegcv1.PlanContainerGCRequest_Sandbox{Sandbox: sandbox("sb-p", "p", time.Minute, 3)}},
	} {
		if err := containers.Send(item); err != nil {
			t.Fatal(err)
		}
	}
	cplan, err := containers.CloseAndRecv()
	if err != nil || !slices.Equal(cplan.GetRemoveContainerIds(), []string{"a-1"}) || !slices.Equal(cplan.GetRemoveSandboxIds(), []string{"sb-old"}) {
		t.Errorf("PlanContainerGC = %v, %v; want containers [a-1] (two kept per container), sandboxes [sb-old]", cplan, err)
	}
}
