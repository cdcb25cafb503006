package sdk

import (
	"context"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

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

// Optional devices capabilities, as GetCapabilities reports them. A
// resource may set preferred_allocation_available or pre_start_required
// only when the plugin has the matching capability; the SDK refuses to send
// one that claims more.
const (
	CapabilityDevicesPreferredAllocation = "devices.preferred_allocation"
	CapabilityDevicesPreStart            = "devices.pre_start"
)

func adaptDevices(impl any) (func(grpc.ServiceRegistrar), []string, error) {
	p, err := mustImplement[DevicePlugin](impl, "sdk.DevicePlugin (ListAndWatch, Allocate)")
	if err != nil {
		return nil, nil, err
	}
	caps := append(capabilityIf[PreferredAllocator](impl, CapabilityDevicesPreferredAllocation),
		capabilityIf[PreStarter](impl, CapabilityDevicesPreStart)...)
	return func(g grpc.ServiceRegistrar) { devicesv1.RegisterDevicesServiceServer(g, &devicesServer{impl: p}) }, caps, nil
}

type devicesServer struct {
	devicesv1.UnimplementedDevicesServiceServer
	impl DevicePlugin
}

func (s *devicesServer) ListAndWatch(_ *devicesv1.ListAndWatchRequest, stream grpc.ServerStreamingServer[devicesv1.ListAndWatchResponse]) error {
	return streamError(s.impl.ListAndWatch(stream.Context(), func(rs []*devicesv1.Resource) error {
		if err := s.checkResources(rs); err != nil {
			return err
		}
		return stream.Send(&devicesv1.ListAndWatchResponse{Resources: rs})
	}))
}

// checkResources refuses resources that promise calls the plugin does not
// implement: the core would make them and fail every allocation.
func (s *devicesServer) checkResources(rs []*devicesv1.Resource) error {
	_, allocator := s.impl.(PreferredAllocator)
	_, preStarter := s.impl.(PreStarter)
	for _, r := range rs {
		if r.GetPreferredAllocationAvailable() && !allocator {
			return status.Errorf(codes.Internal, "resource %q sets preferred_allocation_available, but the plugin does not implement sdk.PreferredAllocator", r.GetName())
		}
		if r.GetPreStartRequired() && !preStarter {
			return status.Errorf(codes.Internal, "resource %q sets pre_start_required, but the plugin does not implement sdk.PreStarter", r.GetName())
		}
	}
	return nil
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
