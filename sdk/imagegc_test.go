package sdk_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/hashicorp/go-hclog"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	imagegcv1 "github.com/microlet/microlet/proto/microlet/imagegc/v1"
	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/sdktest"
)

// imageCollector plans to remove every image it was streamed, in order.
type imageCollector struct{ configurable }

func (imageCollector) PlanImageGC(_ context.Context, gc *imagegcv1.ImageGCContext, images []*imagegcv1.Image) (*imagegcv1.PlanImageGCResponse, error) {
	resp := &imagegcv1.PlanImageGCResponse{Reason: fmt.Sprintf("free %d bytes", gc.GetBytesToFree())}
	for _, img := range images {
		resp.RemoveImageIds = append(resp.RemoveImageIds, img.GetId())
	}
	return resp, nil
}

// containerCollector plans to remove every container and sandbox it was
// streamed, in order.
type containerCollector struct{ configurable }

func (containerCollector) PlanContainerGC(_ context.Context, gc *imagegcv1.ContainerGCContext, containers []*imagegcv1.DeadContainer, sandboxes []*imagegcv1.Sandbox) (*imagegcv1.PlanContainerGCResponse, error) {
	if !gc.GetRemoveAll() {
		return &imagegcv1.PlanContainerGCResponse{}, nil
	}
	resp := &imagegcv1.PlanContainerGCResponse{}
	for _, c := range containers {
		resp.RemoveContainerIds = append(resp.RemoveContainerIds, c.GetId())
	}
	for _, s := range sandboxes {
		resp.RemoveSandboxIds = append(resp.RemoveSandboxIds, s.GetId())
	}
	return resp, nil
}

type bothCollectors struct {
	imageCollector
	containerCollector
}

func (bothCollectors) Configure(context.Context, *noConfig, *sdk.Host) error { return nil }

func planImages(t *testing.T, h *sdktest.Harness, msgs ...*imagegcv1.PlanImageGCRequest) (*imagegcv1.PlanImageGCResponse, error) {
	t.Helper()
	return sendAll(t, h.ImageGC().PlanImageGC, msgs)
}

func planContainers(t *testing.T, h *sdktest.Harness, msgs ...*imagegcv1.PlanContainerGCRequest) (*imagegcv1.PlanContainerGCResponse, error) {
	t.Helper()
	return sendAll(t, h.ImageGC().PlanContainerGC, msgs)
}

// sendAll streams msgs to a client-streaming call and returns its answer.
// A Send that fails only means the plugin answered early; CloseAndRecv
// returns that answer.
func sendAll[Req, Resp any](t *testing.T, open func(context.Context, ...grpc.CallOption) (grpc.ClientStreamingClient[Req, Resp], error), msgs []*Req) (*Resp, error) {
	t.Helper()
	stream, err := open(t.Context())
	if err != nil {
		t.Fatalf("open stream: %v", err)
	}
	for _, m := range msgs {
		if stream.Send(m) != nil {
			break
		}
	}
	return stream.CloseAndRecv()
}

func imageGCContext(bytes uint64) *imagegcv1.PlanImageGCRequest {
	return &imagegcv1.PlanImageGCRequest{Item: &imagegcv1.PlanImageGCRequest_Context{Context: &imagegcv1.ImageGCContext{BytesToFree: bytes}}}
}

func image(id string) *imagegcv1.PlanImageGCRequest {
	return &imagegcv1.PlanImageGCRequest{Item: &imagegcv1.PlanImageGCRequest_Image{Image: &imagegcv1.Image{Id: id}}}
}

func containerGCContext() *imagegcv1.PlanContainerGCRequest {
	return &imagegcv1.PlanContainerGCRequest{Item: &imagegcv1.PlanContainerGCRequest_Context{Context: &imagegcv1.ContainerGCContext{RemoveAll: true}}}
}

func deadContainer(id string) *imagegcv1.PlanContainerGCRequest {
	return &imagegcv1.PlanContainerGCRequest{Item: &imagegcv1.PlanContainerGCRequest_Container{Container: &imagegcv1.DeadContainer{Id: id}}}
}

func sandbox(id string) *imagegcv1.PlanContainerGCRequest {
	return &imagegcv1.PlanContainerGCRequest{Item: &imagegcv1.PlanContainerGCRequest_Sandbox{Sandbox: &imagegcv1.Sandbox{Id: id}}}
}

func TestImageGCGathersTheStream(t *testing.T) {
	h := sdktest.InProcess(t, info(sdk.KindImageGC), bothCollectors{})
	if caps, want := h.Capabilities(), []string{sdk.CapabilityImageGCImages, sdk.CapabilityImageGCContainers}; !slices.Equal(caps, want) {
		t.Errorf("capabilities %v, want %v", caps, want)
	}
	mustConfigure(t, h)
	images, err := planImages(t, h, imageGCContext(42), image("sha256:a"), image("sha256:b"), image("sha256:c"))
	if err != nil || !slices.Equal(images.GetRemoveImageIds(), []string{"sha256:a", "sha256:b", "sha256:c"}) || images.GetReason() != "free 42 bytes" {
		t.Errorf("PlanImageGC = %v, %v", images, err)
	}
	containers, err := planContainers(t, h, containerGCContext(), deadContainer("c1"), sandbox("s1"), deadContainer("c2"))
	if err != nil || !slices.Equal(containers.GetRemoveContainerIds(), []string{"c1", "c2"}) || !slices.Equal(containers.GetRemoveSandboxIds(), []string{"s1"}) {
		t.Errorf("PlanContainerGC = %v, %v", containers, err)
	}
}

func TestImageGCOneCollector(t *testing.T) {
	images := sdktest.InProcess(t, info(sdk.KindImageGC), imageCollector{})
	if caps := images.Capabilities(); !slices.Equal(caps, []string{sdk.CapabilityImageGCImages}) {
		t.Errorf("image collector capabilities %v", caps)
	}
	mustConfigure(t, images)
	_, err := planContainers(t, images, containerGCContext())
	wantCode(t, "PlanContainerGC of an image collector", err, codes.Unimplemented)

	containers := sdktest.InProcess(t, info(sdk.KindImageGC), containerCollector{})
	if caps := containers.Capabilities(); !slices.Equal(caps, []string{sdk.CapabilityImageGCContainers}) {
		t.Errorf("container collector capabilities %v", caps)
	}
	mustConfigure(t, containers)
	_, err = planImages(t, containers, imageGCContext(0))
	wantCode(t, "PlanImageGC of a container collector", err, codes.Unimplemented)

	_, err = sdk.NewGRPCPlugin(info(sdk.KindImageGC), sdk.Plugin[noConfig](configurable{}), hclog.NewNullLogger())
	if err == nil || !strings.Contains(err.Error(), "implements neither sdk.ImageCollector nor sdk.ContainerCollector") {
		t.Errorf("an imagegc plugin with no collector: %v", err)
	}
}

func TestImageGCStreamOrder(t *testing.T) {
	h := sdktest.InProcess(t, info(sdk.KindImageGC), bothCollectors{})
	mustConfigure(t, h)
	for _, c := range []struct {
		name string
		msgs []*imagegcv1.PlanImageGCRequest
		want string
	}{
		{"no context", []*imagegcv1.PlanImageGCRequest{image("a")}, "an image before the ImageGCContext"},
		{"empty stream", nil, "the stream carried no ImageGCContext"},
		{"two contexts", []*imagegcv1.PlanImageGCRequest{imageGCContext(1), imageGCContext(2)}, "a second ImageGCContext"},
		{"empty message", []*imagegcv1.PlanImageGCRequest{imageGCContext(1), {}}, "neither a context nor an image"},
	} {
		_, err := planImages(t, h, c.msgs...)
		wantCode(t, c.name, err, codes.InvalidArgument)
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
	_, err := planContainers(t, h, sandbox("s1"), containerGCContext())
	wantCode(t, "a sandbox before the context", err, codes.InvalidArgument)
}
