package main

import (
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/sdktest"
)

const mi = 1 << 20

// TestLargest runs the same checks against the plugin served in-process
// and against the built binary, launched as the core launches it.
func TestLargest(t *testing.T) {
	for name, serve := range map[string]func(*testing.T) *sdktest.Harness{
		"in-process": func(t *testing.T) *sdktest.Harness { return sdktest.InProcess(t, info, &largest{}) },
		"subprocess": func(t *testing.T) *sdktest.Harness { return sdktest.Subprocess(t, sdktest.Build(t, ".")) },
	} {
		t.Run(name, func(t *testing.T) { checkLargest(t, serve(t)) })
	}
}

func checkLargest(t *testing.T, h *sdktest.Harness) {
	id := h.Identity()
	if id.GetKind() != sdk.KindEviction || id.GetName() != "largest" || id.GetPluginVersion() != "0.1.0" || !slices.Equal(id.GetApiVersions(), []string{"v1"}) {
		t.Fatalf("GetIdentity = %v", id)
	}

	const badQuantity = `invalid quantity "lots": unexpected "l" at offset 0`
	errs, err := h.ValidateConfig(map[string]any{"memory_available": "lots"})
	if err != nil || len(errs) != 1 || errs[0].Path != "memory_available" || !strings.HasPrefix(errs[0].Message, badQuantity) {
		t.Errorf("ValidateConfig(memory_available = \"lots\") = %v, %v", errs, err)
	}
	err = h.Configure(map[string]any{"memory_available": "lots", "memory_availble": "1Gi"})
	for _, want := range []string{"invalid config: memory_available: " + badQuantity, `memory_availble: unknown key (did you mean "memory_available"?)`} {
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), want) {
			t.Errorf("Configure with a bad block: %v; want INVALID_ARGUMENT with %q", err, want)
		}
	}

	if err := h.Configure(map[string]any{"memory_available": "1Gi"}); err != nil {
		t.Fatalf("Configure: %v", err)
	}
	pods := []*typesv1.Pod{{Uid: "critical", Critical: true}, {Uid: "small"}, {Uid: "big"}}
	stats := []*typesv1.PodStats{podStats("critical", 900*mi), podStats("small", 300*mi), podStats("big", 400*mi), podStats("gone", 1024*mi)}
	for _, c := range []struct {
		name      string
		available *uint64 // nil: the core could not measure it
		pods      []*typesv1.Pod
		pressure  string
		evict     string
	}{
		{name: "no pressure", available: bytes(2048 * mi), pods: pods, pressure: "False"},
		{name: "unmeasured", pods: pods, pressure: "False"},
		{name: "pressure evicts the largest non-critical pod", available: bytes(512 * mi), pods: pods, pressure: "True", evict: "big"},
		{name: "pressure never evicts a critical pod", available: bytes(512 * mi), pods: pods[:1], pressure: "True"},
	} {
		t.Run(c.name, func(t *testing.T) {
			resp, err := h.Eviction().Synchronize(t.Context(), &evictionv1.SynchronizeRequest{
				NodeStats: &typesv1.NodeStats{Memory: &typesv1.MemoryStats{AvailableBytes: c.available}},
				Pods:      c.pods,
				PodStats:  stats,
			})
			if err != nil {
				t.Fatalf("Synchronize: %v", err)
			}
			if conds := resp.GetConditions(); len(conds) != 1 || conds[0].GetType() != "MemoryPressure" || conds[0].GetStatus() != c.pressure {
				t.Errorf("conditions %v, want MemoryPressure %s", conds, c.pressure)
			}
			var evicted []string
			for _, e := range resp.GetEvictions() {
				evicted = append(evicted, e.GetPodUid())
			}
			if c.evict == "" {
				if len(evicted) != 0 {
					t.Errorf("evicted %v, want none", evicted)
				}
				return
			}
			if !slices.Equal(evicted, []string{c.evict}) {
				t.Fatalf("evicted %v, want [%s]", evicted, c.evict)
			}
			e := resp.GetEvictions()[0]
			if want := "The node was low on resource: memory. Threshold quantity: 1Gi, available: 512Mi. "; e.GetMessage() != want || e.GetSignal() != "memory.available" {
				t.Errorf("eviction %v, want signal memory.available and message %q", e, want)
			}
		})
	}
}

func podStats(uid string, workingSet uint64) *typesv1.PodStats {
	return &typesv1.PodStats{PodRef: &typesv1.PodReference{Uid: uid}, Memory: &typesv1.MemoryStats{WorkingSetBytes: &workingSet}}
}

func bytes(n uint64) *uint64 { return &n }
