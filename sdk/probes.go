package sdk

import (
	"context"

	"google.golang.org/grpc"

	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
)

// Prober runs probes. The core tells it which containers to probe; it
// reports every attempt through WatchResults.
type Prober interface {
	// SetContainerProbes starts or replaces the probes of one container.
	SetContainerProbes(ctx context.Context, c *probesv1.ContainerProbes) error
	// RemoveContainerProbes stops probing one container.
	RemoveContainerProbes(ctx context.Context, containerID string) error
	// SyncProbes replaces the whole set.
	SyncProbes(ctx context.Context, all []*probesv1.ContainerProbes) error
	// WatchResults calls send with the result of every probe attempt until
	// ctx ends or send fails. The core keeps one watch open.
	WatchResults(ctx context.Context, send func(*probesv1.ProbeResult) error) error
}

func adaptProbes(impl any) (func(grpc.ServiceRegistrar), []string, error) {
	p, err := mustImplement[Prober](impl, "sdk.Prober (SetContainerProbes, RemoveContainerProbes, SyncProbes, WatchResults)")
	if err != nil {
		return nil, nil, err
	}
	return func(g grpc.ServiceRegistrar) { probesv1.RegisterProbesServiceServer(g, &probesServer{impl: p}) }, nil, nil
}

type probesServer struct {
	probesv1.UnimplementedProbesServiceServer
	impl Prober
}

func (s *probesServer) SetContainerProbes(ctx context.Context, req *probesv1.SetContainerProbesRequest) (*probesv1.SetContainerProbesResponse, error) {
	if req.GetContainer().GetContainerId() == "" {
		return nil, Invalid("SetContainerProbes: container_id is empty")
	}
	return call(&probesv1.SetContainerProbesResponse{}, s.impl.SetContainerProbes(ctx, req.GetContainer()))
}

func (s *probesServer) RemoveContainerProbes(ctx context.Context, req *probesv1.RemoveContainerProbesRequest) (*probesv1.RemoveContainerProbesResponse, error) {
	if req.GetContainerId() == "" {
		return nil, Invalid("RemoveContainerProbes: container_id is empty")
	}
	return call(&probesv1.RemoveContainerProbesResponse{}, s.impl.RemoveContainerProbes(ctx, req.GetContainerId()))
}

func (s *probesServer) SyncProbes(stream grpc.ClientStreamingServer[probesv1.SyncProbesRequest, probesv1.SyncProbesResponse]) error {
	var all []*probesv1.ContainerProbes
	err := recvEach(stream.Recv, func(r *probesv1.SyncProbesRequest) error {
		if r.GetContainer().GetContainerId() == "" {
			return Invalid("SyncProbes: message %d has an empty container_id", len(all)+1)
		}
		all = append(all, r.GetContainer())
		return nil
	})
	if err != nil {
		return err
	}
	if _, err := call(&probesv1.SyncProbesResponse{}, s.impl.SyncProbes(stream.Context(), all)); err != nil {
		return err
	}
	return stream.SendAndClose(&probesv1.SyncProbesResponse{})
}

func (s *probesServer) WatchResults(_ *probesv1.WatchResultsRequest, stream grpc.ServerStreamingServer[probesv1.WatchResultsResponse]) error {
	return streamError(s.impl.WatchResults(stream.Context(), func(r *probesv1.ProbeResult) error {
		return stream.Send(&probesv1.WatchResultsResponse{Result: r})
	}))
}
