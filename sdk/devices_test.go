package sdk_test

import (
	"context"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"

	devicesv1 "github.com/microlet/microlet/proto/microlet/devices/v1"
	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/sdktest"
)

// devicePlugin sends each of its updates in turn, then ends the watch.
type devicePlugin struct {
	configurable
	updates [][]*devicesv1.Resource
}

func (d devicePlugin) ListAndWatch(_ context.Context, send func([]*devicesv1.Resource) error) error {
	for _, u := range d.updates {
		if err := send(u); err != nil {
			return err
		}
	}
	return nil
}

func (devicePlugin) Allocate(_ context.Context, req *devicesv1.AllocateRequest) (*devicesv1.AllocateResponse, error) {
	resp := &devicesv1.AllocateResponse{}
	for _, c := range req.GetContainers() {
		resp.Containers = append(resp.Containers, &devicesv1.ContainerAllocateResponse{Envs: map[string]string{"DEVICES": strings.Join(c.GetDeviceIds(), ",")}})
	}
	return resp, nil
}

type fullDevicePlugin struct{ devicePlugin }

func (fullDevicePlugin) GetPreferredAllocation(_ context.Context, req *devicesv1.GetPreferredAllocationRequest) (*devicesv1.GetPreferredAllocationResponse, error) {
	c := req.GetContainers()[0]
	return &devicesv1.GetPreferredAllocationResponse{Containers: []*devicesv1.ContainerPreferredAllocationResponse{
		{DeviceIds: c.GetAvailableDeviceIds()[:c.GetAllocationSize()]},
	}}, nil
}

func (fullDevicePlugin) PreStartContainer(context.Context, *devicesv1.PreStartContainerRequest) error {
	return nil
}

func gpu(ids ...string) *devicesv1.Resource {
	r := &devicesv1.Resource{Name: "example.com/gpu"}
	for _, id := range ids {
		r.Devices = append(r.Devices, &devicesv1.Device{Id: id, Healthy: true})
	}
	return r
}

// listAndWatch gathers every update of one ListAndWatch stream as the
// device IDs of its first resource.
func listAndWatch(t *testing.T, h *sdktest.Harness) ([][]string, error) {
	t.Helper()
	stream, err := h.Devices().ListAndWatch(t.Context(), &devicesv1.ListAndWatchRequest{})
	if err != nil {
		t.Fatalf("ListAndWatch: %v", err)
	}
	var updates [][]string
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return updates, nil
		}
		if err != nil {
			return updates, err
		}
		var ids []string
		for _, d := range resp.GetResources()[0].GetDevices() {
			ids = append(ids, d.GetId())
		}
		updates = append(updates, ids)
	}
}

func TestDevices(t *testing.T) {
	h := sdktest.InProcess(t, info(sdk.KindDevices), devicePlugin{updates: [][]*devicesv1.Resource{{gpu("0")}, {gpu("0", "1")}}})
	if caps := h.Capabilities(); len(caps) != 0 {
		t.Errorf("capabilities %v, want none", caps)
	}
	mustConfigure(t, h)
	updates, err := listAndWatch(t, h)
	if err != nil || len(updates) != 2 || !slices.Equal(updates[1], []string{"0", "1"}) {
		t.Errorf("ListAndWatch updates %v, %v; want [[0] [0 1]]", updates, err)
	}
	alloc, err := h.Devices().Allocate(t.Context(), &devicesv1.AllocateRequest{Containers: []*devicesv1.ContainerAllocateRequest{{DeviceIds: []string{"0", "1"}}}})
	if err != nil || alloc.GetContainers()[0].GetEnvs()["DEVICES"] != "0,1" {
		t.Errorf("Allocate = %v, %v", alloc, err)
	}
	_, err = h.Devices().GetPreferredAllocation(t.Context(), &devicesv1.GetPreferredAllocationRequest{})
	wantCode(t, "GetPreferredAllocation without sdk.PreferredAllocator", err, codes.Unimplemented)
	_, err = h.Devices().PreStartContainer(t.Context(), &devicesv1.PreStartContainerRequest{})
	wantCode(t, "PreStartContainer without sdk.PreStarter", err, codes.Unimplemented)
}

func TestDevicesOptionalInterfaces(t *testing.T) {
	flagged := gpu("0", "1", "2")
	flagged.PreStartRequired, flagged.PreferredAllocationAvailable = true, true
	h := sdktest.InProcess(t, info(sdk.KindDevices), fullDevicePlugin{devicePlugin{updates: [][]*devicesv1.Resource{{flagged}}}})
	if caps, want := h.Capabilities(), []string{sdk.CapabilityDevicesPreferredAllocation, sdk.CapabilityDevicesPreStart}; !slices.Equal(caps, want) {
		t.Errorf("capabilities %v, want %v", caps, want)
	}
	mustConfigure(t, h)
	if updates, err := listAndWatch(t, h); err != nil || len(updates) != 1 {
		t.Errorf("ListAndWatch of a resource the plugin backs: %v, %v", updates, err)
	}
	pref, err := h.Devices().GetPreferredAllocation(t.Context(), &devicesv1.GetPreferredAllocationRequest{
		Containers: []*devicesv1.ContainerPreferredAllocationRequest{{AvailableDeviceIds: []string{"2", "1", "0"}, AllocationSize: 2}},
	})
	if err != nil || !slices.Equal(pref.GetContainers()[0].GetDeviceIds(), []string{"2", "1"}) {
		t.Errorf("GetPreferredAllocation = %v, %v", pref, err)
	}
	if _, err := h.Devices().PreStartContainer(t.Context(), &devicesv1.PreStartContainerRequest{}); err != nil {
		t.Errorf("PreStartContainer: %v", err)
	}
}

func TestDevicesRefuseResourcesThePluginCannotBack(t *testing.T) {
	for _, c := range []struct {
		flag func(*devicesv1.Resource)
		want string
	}{
		{func(r *devicesv1.Resource) { r.PreStartRequired = true }, `resource "example.com/gpu" sets pre_start_required, but the plugin does not implement sdk.PreStarter`},
		{func(r *devicesv1.Resource) { r.PreferredAllocationAvailable = true }, `resource "example.com/gpu" sets preferred_allocation_available, but the plugin does not implement sdk.PreferredAllocator`},
	} {
		r := gpu("0")
		c.flag(r)
		h := sdktest.InProcess(t, info(sdk.KindDevices), devicePlugin{updates: [][]*devicesv1.Resource{{r}}})
		mustConfigure(t, h)
		_, err := listAndWatch(t, h)
		wantCode(t, "ListAndWatch", err, codes.Internal)
		if !strings.Contains(err.Error(), c.want) {
			t.Errorf("ListAndWatch: %v, want %q", err, c.want)
		}
	}
}
