package sdk

import (
	"context"

	"google.golang.org/grpc"

	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
)

// EvictionStrategy is the interface of an eviction plugin: one decision per
// cycle over fresh observations. The core runs the reclaim and the kills.
type EvictionStrategy interface {
	Synchronize(ctx context.Context, req *evictionv1.SynchronizeRequest) (*evictionv1.SynchronizeResponse, error)
}

// EvictionAdmitter is optional: it decides admission under node pressure.
// Without it the core admits by its own rule (no BestEffort pods under
// MemoryPressure, no non-critical pods under other pressure).
type EvictionAdmitter interface {
	Admit(ctx context.Context, req *evictionv1.AdmitRequest) (*evictionv1.AdmitResponse, error)
}

// NodeReserver is optional: it says what hard thresholds hold back from pods.
type NodeReserver interface {
	GetNodeReservation(ctx context.Context, req *evictionv1.GetNodeReservationRequest) (*evictionv1.GetNodeReservationResponse, error)
}

// Optional eviction capabilities, as GetCapabilities reports them.
const (
	CapabilityEvictionAdmit       = "eviction.admit"
	CapabilityEvictionReservation = "eviction.reservation"
)

func adaptEviction(impl any) (func(grpc.ServiceRegistrar), []string, error) {
	s, err := mustImplement[EvictionStrategy](impl, "sdk.EvictionStrategy (Synchronize)")
	if err != nil {
		return nil, nil, err
	}
	caps := append(capabilityIf[EvictionAdmitter](impl, CapabilityEvictionAdmit),
		capabilityIf[NodeReserver](impl, CapabilityEvictionReservation)...)
	return func(g grpc.ServiceRegistrar) { evictionv1.RegisterEvictionServiceServer(g, &evictionServer{impl: s}) }, caps, nil
}

type evictionServer struct {
	evictionv1.UnimplementedEvictionServiceServer
	impl EvictionStrategy
}

func (s *evictionServer) Synchronize(ctx context.Context, req *evictionv1.SynchronizeRequest) (*evictionv1.SynchronizeResponse, error) {
	return call(s.impl.Synchronize(ctx, req))
}

func (s *evictionServer) Admit(ctx context.Context, req *evictionv1.AdmitRequest) (*evictionv1.AdmitResponse, error) {
	a, ok := s.impl.(EvictionAdmitter)
	if !ok {
		return nil, unsupported("Admit")
	}
	return call(a.Admit(ctx, req))
}

func (s *evictionServer) GetNodeReservation(ctx context.Context, req *evictionv1.GetNodeReservationRequest) (*evictionv1.GetNodeReservationResponse, error) {
	r, ok := s.impl.(NodeReserver)
	if !ok {
		return nil, unsupported("GetNodeReservation")
	}
	return call(r.GetNodeReservation(ctx, req))
}
