package sdk

import (
	"context"

	"google.golang.org/grpc"

	devicesv1 "github.com/microlet/microlet/proto/microlet/devices/v1"
)

// DevicePlugin exposes devices as extended resources.
type DevicePlugin interface {
	// ListAndWatch calls send with the full set of resources at once and
	// again whenever it changes, until ctx ends or send fails.
	ListAndWatch(ctx context.Context, send func([]*devicesv1.Resource) error) error
	// Allocate prepares devices for a pod's containers.
	Allocate(ctx context.Context, req *devicesv1.AllocateRequest) (*devicesv1.AllocateResponse, error)
}

// PreferredAllocator is optional: it picks devices for the core.
type PreferredAllocator interface {
	GetPreferredAllocation(ctx context.Context, req *devicesv1.GetPreferredAllocationRequest) (*devicesv1.GetPreferredAllocationResponse, error)
}

// PreStarter is optional: it runs before a container that uses its devices starts.
type PreStarter interface {
	PreStartContainer(ctx context.Context, req *devicesv1.PreStartContainerRequest) error
}

func adaptDevices(impl any) (func(*grpc.Server), []string, error) {
	p, err := mustImplement[DevicePlugin](impl, "sdk.DevicePlugin (ListAndWatch, Allocate)")
	if err != nil {
		return nil, nil, err
	}
	return func(g *grpc.Server) { devicesv1.RegisterDevicesServiceServer(g, &devicesServer{impl: p}) }, nil, nil
}

type devicesServer struct {
	devicesv1.UnimplementedDevicesServiceServer
	impl DevicePlugin
}

func (s *devicesServer) ListAndWatch(_ *devicesv1.ListAndWatchRequest, stream grpc.ServerStreamingServer[devicesv1.ListAndWatchResponse]) error {
	return s.impl.ListAndWatch(stream.Context(), func(rs []*devicesv1.Resource) error {
		return stream.Send(&devicesv1.ListAndWatchResponse{Resources: rs})
	})
}

func (s *devicesServer) GetPreferredAllocation(ctx context.Context, req *devicesv1.GetPreferredAllocationRequest) (*devicesv1.GetPreferredAllocationResponse, error) {
	p, ok := s.impl.(PreferredAllocator)
	if !ok {
		return nil, unsupported("GetPreferredAllocation")
	}
	return call(p.GetPreferredAllocation(ctx, req))
}

func (s *devicesServer) Allocate(ctx context.Context, req *devicesv1.AllocateRequest) (*devicesv1.AllocateResponse, error) {
	return call(s.impl.Allocate(ctx, req))
}

func (s *devicesServer) PreStartContainer(ctx context.Context, req *devicesv1.PreStartContainerRequest) (*devicesv1.PreStartContainerResponse, error) {
	p, ok := s.impl.(PreStarter)
	if !ok {
		return nil, unsupported("PreStartContainer")
	}
	return call(&devicesv1.PreStartContainerResponse{}, p.PreStartContainer(ctx, req))
}
