// Command microlet-eviction-largest is the SDK's example eviction strategy:
// when memory.available falls below a threshold, evict the non-critical pod
// using the most memory. It shows the whole of a third-party plugin.
package main

import (
	"context"
	"fmt"

	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk"
)

type config struct {
	MemoryAvailable sdk.Quantity `json:"memory_available"`
}

func (c *config) SetDefaults() { c.MemoryAvailable = sdk.MustParseQuantity("100Mi") }

type largest struct{ threshold int64 }

func (l *largest) Configure(_ context.Context, c *config, _ *sdk.Host) error {
	l.threshold = c.MemoryAvailable.Value()
	return nil
}

func (l *largest) Synchronize(_ context.Context, req *evictionv1.SynchronizeRequest) (*evictionv1.SynchronizeResponse, error) {
	available := int64(req.GetNodeStats().GetMemory().GetAvailableBytes())
	pressure := available < l.threshold
	resp := &evictionv1.SynchronizeResponse{Conditions: []*typesv1.NodeCondition{{Type: "MemoryPressure", Status: "False"}}}
	if !pressure {
		return resp, nil
	}
	resp.Conditions[0].Status = "True"
	critical := map[string]bool{}
	for _, p := range req.GetPods() {
		critical[p.GetUid()] = p.GetCritical()
	}
	var victim *typesv1.PodStats
	for _, ps := range req.GetPodStats() {
		if !critical[ps.GetPodRef().GetUid()] && ps.GetMemory().GetWorkingSetBytes() > victim.GetMemory().GetWorkingSetBytes() {
			victim = ps
		}
	}
	if victim != nil {
		resp.Evictions = []*evictionv1.Eviction{{
			PodUid: victim.GetPodRef().GetUid(),
			Signal: "memory.available",
			Message: fmt.Sprintf("The node was low on resource: memory. Threshold quantity: %d, available: %d.",
				l.threshold, available),
		}}
	}
	return resp, nil
}

func main() {
	sdk.Serve(sdk.Info{Kind: sdk.KindEviction, Name: "largest", Version: "0.1.0"}, &largest{})
}
