package sdk

import (
	"context"
	"fmt"

	"google.golang.org/grpc"

	imagegcv1 "github.com/microlet/microlet/proto/microlet/imagegc/v1"
)

// ImageCollector decides which unused images to remove. The SDK gathers the
// streamed images into a slice.
type ImageCollector interface {
	PlanImageGC(ctx context.Context, gc *imagegcv1.ImageGCContext, images []*imagegcv1.Image) (*imagegcv1.PlanImageGCResponse, error)
}

// ContainerCollector decides which dead containers and sandboxes to remove.
type ContainerCollector interface {
	PlanContainerGC(ctx context.Context, gc *imagegcv1.ContainerGCContext, containers []*imagegcv1.DeadContainer, sandboxes []*imagegcv1.Sandbox) (*imagegcv1.PlanContainerGCResponse, error)
}

// Capabilities of an imagegc plugin: which of the two collectors it is.
const (
	CapabilityImageGCImages     = "imagegc.images"
	CapabilityImageGCContainers = "imagegc.containers"
)

func adaptImageGC(impl any) (func(grpc.ServiceRegistrar), []string, error) {
	caps := append(capabilityIf[ImageCollector](impl, CapabilityImageGCImages),
		capabilityIf[ContainerCollector](impl, CapabilityImageGCContainers)...)
	if len(caps) == 0 {
		return nil, nil, fmt.Errorf("implements neither sdk.ImageCollector nor sdk.ContainerCollector")
	}
	return func(g grpc.ServiceRegistrar) { imagegcv1.RegisterImageGCServiceServer(g, &imageGCServer{impl: impl}) }, caps, nil
}

type imageGCServer struct {
	imagegcv1.UnimplementedImageGCServiceServer
	impl any
}

func (s *imageGCServer) PlanImageGC(stream grpc.ClientStreamingServer[imagegcv1.PlanImageGCRequest, imagegcv1.PlanImageGCResponse]) error {
	c, ok := s.impl.(ImageCollector)
	if !ok {
		return unsupported("PlanImageGC")
	}
	var gc *imagegcv1.ImageGCContext
	var images []*imagegcv1.Image
	err := recvEach(stream.Recv, func(r *imagegcv1.PlanImageGCRequest) error {
		switch item := r.GetItem().(type) {
		case *imagegcv1.PlanImageGCRequest_Context:
			if gc != nil {
				return Invalid("PlanImageGC: a second ImageGCContext; the stream carries one, first")
			}
			gc = item.Context
			return nil
		case nil:
			return Invalid("PlanImageGC: a message with neither a context nor an image")
		}
		if gc == nil {
			return Invalid("PlanImageGC: an image before the ImageGCContext; the context comes first")
		}
		images = append(images, r.GetImage())
		return nil
	})
	if err != nil {
		return err
	}
	if gc == nil {
		return Invalid("PlanImageGC: the stream carried no ImageGCContext")
	}
	resp, err := call(c.PlanImageGC(stream.Context(), gc, images))
	if err != nil {
		return err
	}
	return stream.SendAndClose(resp)
}

func (s *imageGCServer) PlanContainerGC(stream grpc.ClientStreamingServer[imagegcv1.PlanContainerGCRequest, imagegcv1.PlanContainerGCResponse]) error {
	c, ok := s.impl.(ContainerCollector)
	if !ok {
		return unsupported("PlanContainerGC")
	}
	var gc *imagegcv1.ContainerGCContext
	var containers []*imagegcv1.DeadContainer
	var sandboxes []*imagegcv1.Sandbox
	err := recvEach(stream.Recv, func(r *imagegcv1.PlanContainerGCRequest) error {
		switch item := r.GetItem().(type) {
		case *imagegcv1.PlanContainerGCRequest_Context:
			if gc != nil {
				return Invalid("PlanContainerGC: a second ContainerGCContext; the stream carries one, first")
			}
			gc = item.Context
			return nil
		case nil:
			return Invalid("PlanContainerGC: a message with neither a context, a container nor a sandbox")
		}
		if gc == nil {
			return Invalid("PlanContainerGC: a container or sandbox before the ContainerGCContext; the context comes first")
		}
		if dead := r.GetContainer(); dead != nil {
			containers = append(containers, dead)
		} else {
			sandboxes = append(sandboxes, r.GetSandbox())
		}
		return nil
	})
	if err != nil {
		return err
	}
	if gc == nil {
		return Invalid("PlanContainerGC: the stream carried no ContainerGCContext")
	}
	resp, err := call(c.PlanContainerGC(stream.Context(), gc, containers, sandboxes))
	if err != nil {
		return err
	}
	return stream.SendAndClose(resp)
}
