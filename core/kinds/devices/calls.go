package devices

import (
	"context"
	"fmt"
	"time"

	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/microlet/microlet/core/pluginhost"
	devicesv1 "github.com/microlet/microlet/proto/microlet/devices/v1"
)

// preStartTimeout is upstream's KubeletPreStartContainerRPCTimeoutInSecs.
const preStartTimeout = pluginapi.KubeletPreStartContainerRPCTimeoutInSecs * time.Second

// call runs fn on the serving process of the plugin named owner, within
// timeout, its error sorted by pluginhost.Classify: it wraps
// pluginhost.ErrUnavailable when no process serves, the process was lost
// during the call, or the plugin asked to be tried again later.
func (m *Manager) call(ctx context.Context, owner string, timeout time.Duration, fn func(context.Context, devicesv1.DevicesServiceClient) error) error {
	slot := m.slot(owner)
	if slot == nil {
		return fmt.Errorf("%w: device plugin %s is not configured", pluginhost.ErrUnavailable, pluginName(owner))
	}
	client := pluginhost.Client[devicesv1.DevicesServiceClient]{Slot: slot, New: devicesv1.NewDevicesServiceClient, Timeout: timeout}
	return pluginhost.Classify(ctx, client.Call(ctx, func(ctx context.Context, c pluginhost.Conn[devicesv1.DevicesServiceClient]) error {
		return fn(ctx, c.Client)
	}))
}

// preferred asks the plugin which devices it prefers.
func (m *Manager) preferred(ctx context.Context, owner, resource string, available, mustInclude []string, size int) ([]string, error) {
	var out []string
	err := m.call(ctx, owner, m.opts.CallTimeout, func(ctx context.Context, c devicesv1.DevicesServiceClient) error {
		resp, err := c.GetPreferredAllocation(ctx, &devicesv1.GetPreferredAllocationRequest{ResourceName: resource,
			Containers: []*devicesv1.ContainerPreferredAllocationRequest{{
				AvailableDeviceIds: available, MustIncludeDeviceIds: mustInclude, AllocationSize: int32(size),
			}}})
		if err == nil && len(resp.GetContainers()) > 0 {
			out = resp.GetContainers()[0].GetDeviceIds()
		}
		return err
	})
	return out, err
}

// allocate asks the plugin to prepare devices for one container.
func (m *Manager) allocate(ctx context.Context, owner, resource, podUID string, ids []string) (*devicesv1.ContainerAllocateResponse, error) {
	var out *devicesv1.ContainerAllocateResponse
	defer m.metrics.observeAllocate(resource, time.Now())
	err := m.call(ctx, owner, m.opts.CallTimeout, func(ctx context.Context, c devicesv1.DevicesServiceClient) error {
		resp, err := c.Allocate(ctx, &devicesv1.AllocateRequest{ResourceName: resource, PodUid: podUID,
			Containers: []*devicesv1.ContainerAllocateRequest{{DeviceIds: ids}}})
		if err != nil {
			return err
		}
		if len(resp.GetContainers()) != 1 {
			return fmt.Errorf("device plugin %s answered Allocate for %d containers, asked for 1", pluginName(owner), len(resp.GetContainers()))
		}
		out = resp.GetContainers()[0]
		return nil
	})
	return out, err
}

// preStart runs the plugin's PreStartContainer for a container's devices.
func (m *Manager) preStart(ctx context.Context, owner, resource string, ids []string) error {
	return m.call(ctx, owner, preStartTimeout, func(ctx context.Context, c devicesv1.DevicesServiceClient) error {
		_, err := c.PreStartContainer(ctx, &devicesv1.PreStartContainerRequest{ResourceName: resource, DeviceIds: ids})
		return err
	})
}
