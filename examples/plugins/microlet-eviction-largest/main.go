// Command microlet-eviction-largest is the SDK's example eviction strategy:
// when memory.available falls below a threshold, evict the non-critical pod
// using the most memory. It is the whole of a third-party plugin.
package main

import (
	"context"
	"fmt"

	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk"
)

// config is the plugin's config block: config { memory_available = "500Mi" }.
type config struct {
	MemoryAvailable sdk.Quantity `json:"memory_available"`
}

func (c *config) SetDefaults() { c.MemoryAvailable = sdk.MustParseQuantity("100Mi") }

type largest struct{ threshold sdk.Quantity }

func (l *largest) Configure(_ context.Context, c *config, _ *sdk.Host) error {
	l.threshold = c.MemoryAvailable
	return nil
}

func (l *largest) Synchronize(_ context.Context, req *evictionv1.SynchronizeRequest) (*evictionv1.SynchronizeResponse, error) {
	memory := req.GetNodeStats().GetMemory()
	pressure := memory != nil && memory.AvailableBytes != nil && int64(*memory.AvailableBytes) < l.threshold.Value()
	resp := &evictionv1.SynchronizeResponse{Conditions: []*typesv1.NodeCondition{{Type: "MemoryPressure", Status: "False"}}}
	if !pressure {
		return resp, nil
	}
	resp.Conditions[0].Status = "True"
	pods := map[string]*typesv1.Pod{}
	for _, p := range req.GetPods() {
		pods[p.GetUid()] = p
	}
	var victim *typesv1.PodStats
	for _, ps := range req.GetPodStats() {
		pod := pods[ps.GetPodRef().GetUid()]
		if pod != nil && !pod.GetCritical() && ps.GetMemory().GetWorkingSetBytes() > victim.GetMemory().GetWorkingSetBytes() {
			victim = ps
		}
	}
	if victim != nil {
		resp.Evictions = []*evictionv1.Eviction{{PodUid: victim.GetPodRef().GetUid(), GracePeriodSeconds: 1, Signal: "memory.available",
			Message: fmt.Sprintf("The node was low on resource: memory. Threshold quantity: %v, available: %v. ",
				l.threshold, sdk.BinaryQuantity(int64(*memory.AvailableBytes)))}}
	}
	return resp, nil
}

var info = sdk.Info{Kind: sdk.KindEviction, Name: "largest", Version: "0.1.0"}

func main() { sdk.Serve(info, &largest{}) }
