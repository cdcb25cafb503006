package sdk

import (
	"context"
	"errors"
	"io"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/types/known/durationpb"

	hostv1 "github.com/microlet/microlet/proto/microlet/host/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// Host is the core's HostService, as a plugin sees it: read-only views of
// the node, its pods and the runtime, and exec in a container.
type Host struct {
	client hostv1.HostServiceClient
	// conn is the broker connection the SDK dialled; nil for NewHost.
	conn *grpc.ClientConn
	// NodeName is the node's name.
	NodeName string
}

// NewHost wraps a HostService client; for tests that fake the core.
func NewHost(client hostv1.HostServiceClient, nodeName string) *Host {
	return &Host{client: client, NodeName: nodeName}
}

// close drops the connection the SDK dialled, when Configure fails.
func (h *Host) close() {
	if h != nil && h.conn != nil {
		_ = h.conn.Close()
	}
}

// Client is the raw HostService client, for calls without a helper here.
func (h *Host) Client() hostv1.HostServiceClient { return h.client }

// ExecSync runs cmd in a container and waits at most timeout.
func (h *Host) ExecSync(ctx context.Context, containerID string, cmd []string, timeout time.Duration) (*hostv1.ExecSyncResponse, error) {
	return h.client.ExecSync(ctx, &hostv1.ExecSyncRequest{
		ContainerId: containerID,
		Command:     cmd,
		Timeout:     durationpb.New(timeout),
	})
}

// Node returns the node's capacity, allocatable and conditions.
func (h *Host) Node(ctx context.Context) (*typesv1.Node, error) {
	resp, err := h.client.GetNode(ctx, &hostv1.GetNodeRequest{})
	return resp.GetNode(), err
}

// Pods returns the pods the node runs.
func (h *Host) Pods(ctx context.Context) ([]*typesv1.Pod, error) {
	return collect(ctx, h.client.ListPods, &hostv1.ListPodsRequest{}, (*hostv1.ListPodsResponse).GetPod)
}

// ContainerStats returns the runtime's stats of every container.
func (h *Host) ContainerStats(ctx context.Context) ([]*hostv1.RuntimeContainerStats, error) {
	return collect(ctx, h.client.ListContainerStats, &hostv1.ListContainerStatsRequest{}, (*hostv1.ListContainerStatsResponse).GetStats)
}

// PodSandboxStats returns the runtime's stats of every pod sandbox.
func (h *Host) PodSandboxStats(ctx context.Context) ([]*hostv1.RuntimePodSandboxStats, error) {
	return collect(ctx, h.client.ListPodSandboxStats, &hostv1.ListPodSandboxStatsRequest{}, (*hostv1.ListPodSandboxStatsResponse).GetStats)
}

// ImageFsInfo returns the runtime's image and container filesystems.
func (h *Host) ImageFsInfo(ctx context.Context) (*hostv1.ImageFsInfoResponse, error) {
	return h.client.ImageFsInfo(ctx, &hostv1.ImageFsInfoRequest{})
}

// collect drains a server stream into a slice.
func collect[Req, Resp, Item any](
	ctx context.Context,
	open func(context.Context, *Req, ...grpc.CallOption) (grpc.ServerStreamingClient[Resp], error),
	req *Req,
	item func(*Resp) *Item,
) ([]*Item, error) {
	stream, err := open(ctx, req)
	if err != nil {
		return nil, err
	}
	var out []*Item
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, err
		}
		out = append(out, item(resp))
	}
}
