// Package hostservice is microlet.host.v1.HostService: what plugins may call
// back into. It is deliberately narrow: read-only views of the node, its
// pods and the runtime's stats, plus exec in a container for probes.
package hostservice

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	hostv1 "github.com/microlet/microlet/proto/microlet/host/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// Runtime is the part of the CRI client the host service uses.
type Runtime interface {
	ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (*runtimeapi.ExecSyncResponse, error)
	ListContainerStats(ctx context.Context, filter *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error)
	ListPodSandboxStats(ctx context.Context, filter *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error)
	ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error)
}

// State is the core's view of its pods and node, as plugins see them.
type State interface {
	PodViews() []*typesv1.Pod
	NodeView() *typesv1.Node
}

// Server implements hostv1.HostServiceServer.
type Server struct {
	hostv1.UnimplementedHostServiceServer
	runtime Runtime
	state   State
}

// New returns a host service over the runtime and the core's state.
func New(runtime Runtime, state State) *Server {
	return &Server{runtime: runtime, state: state}
}

// ExecSync runs a command in a container and waits for it.
func (s *Server) ExecSync(ctx context.Context, req *hostv1.ExecSyncRequest) (*hostv1.ExecSyncResponse, error) {
	if req.GetContainerId() == "" || len(req.GetCommand()) == 0 {
		return nil, status.Error(codes.InvalidArgument, "ExecSync needs a container_id and a command")
	}
	resp, err := s.runtime.ExecSync(ctx, req.GetContainerId(), req.GetCommand(), req.GetTimeout().AsDuration())
	if err != nil {
		return nil, err
	}
	return &hostv1.ExecSyncResponse{Stdout: resp.GetStdout(), Stderr: resp.GetStderr(), ExitCode: resp.GetExitCode()}, nil
}

// ListPods streams the node's pods.
func (s *Server) ListPods(_ *hostv1.ListPodsRequest, stream grpc.ServerStreamingServer[hostv1.ListPodsResponse]) error {
	for _, pod := range s.state.PodViews() {
		if err := stream.Send(&hostv1.ListPodsResponse{Pod: pod}); err != nil {
			return err
		}
	}
	return nil
}

// GetNode returns the node.
func (s *Server) GetNode(context.Context, *hostv1.GetNodeRequest) (*hostv1.GetNodeResponse, error) {
	return &hostv1.GetNodeResponse{Node: s.state.NodeView()}, nil
}

// ListContainerStats streams the runtime's stats of every container.
func (s *Server) ListContainerStats(_ *hostv1.ListContainerStatsRequest, stream grpc.ServerStreamingServer[hostv1.ListContainerStatsResponse]) error {
	stats, err := s.runtime.ListContainerStats(stream.Context(), nil)
	if err != nil {
		return err
	}
	for _, st := range stats {
		if err := stream.Send(&hostv1.ListContainerStatsResponse{Stats: containerStats(st)}); err != nil {
			return err
		}
	}
	return nil
}

// ListPodSandboxStats streams the runtime's stats of every pod sandbox.
func (s *Server) ListPodSandboxStats(_ *hostv1.ListPodSandboxStatsRequest, stream grpc.ServerStreamingServer[hostv1.ListPodSandboxStatsResponse]) error {
	stats, err := s.runtime.ListPodSandboxStats(stream.Context(), nil)
	if err != nil {
		return err
	}
	for _, st := range stats {
		if err := stream.Send(&hostv1.ListPodSandboxStatsResponse{Stats: sandboxStats(st)}); err != nil {
			return err
		}
	}
	return nil
}

// ImageFsInfo returns the runtime's image and container filesystems.
func (s *Server) ImageFsInfo(ctx context.Context, _ *hostv1.ImageFsInfoRequest) (*hostv1.ImageFsInfoResponse, error) {
	info, err := s.runtime.ImageFsInfo(ctx)
	if err != nil {
		return nil, err
	}
	resp := &hostv1.ImageFsInfoResponse{}
	for _, fs := range info.GetImageFilesystems() {
		resp.ImageFilesystems = append(resp.ImageFilesystems, filesystemUsage(fs))
	}
	for _, fs := range info.GetContainerFilesystems() {
		resp.ContainerFilesystems = append(resp.ContainerFilesystems, filesystemUsage(fs))
	}
	return resp, nil
}
