package sdk

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	statsv1 "github.com/microlet/microlet/proto/microlet/stats/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// StatsProvider measures the node and its pods.
type StatsProvider interface {
	GetSummary(ctx context.Context, req *statsv1.GetSummaryRequest) (*typesv1.NodeStats, []*typesv1.PodStats, error)
}

func adaptStats(impl any) (func(grpc.ServiceRegistrar), []string, error) {
	p, err := mustImplement[StatsProvider](impl, "sdk.StatsProvider (GetSummary)")
	if err != nil {
		return nil, nil, err
	}
	return func(g grpc.ServiceRegistrar) { statsv1.RegisterStatsServiceServer(g, &statsServer{impl: p}) }, nil, nil
}

type statsServer struct {
	statsv1.UnimplementedStatsServiceServer
	impl StatsProvider
}

func (s *statsServer) GetSummary(req *statsv1.GetSummaryRequest, stream grpc.ServerStreamingServer[statsv1.GetSummaryResponse]) error {
	node, pods, err := s.impl.GetSummary(stream.Context(), req)
	if err != nil {
		return streamError(err)
	}
	if node == nil {
		return status.Error(codes.Internal, "GetSummary returned no node stats; the summary starts with the node")
	}
	if err := stream.Send(&statsv1.GetSummaryResponse{Item: &statsv1.GetSummaryResponse_Node{Node: node}}); err != nil {
		return err
	}
	for _, p := range pods {
		if err := stream.Send(&statsv1.GetSummaryResponse{Item: &statsv1.GetSummaryResponse_Pod{Pod: p}}); err != nil {
			return err
		}
	}
	return nil
}
