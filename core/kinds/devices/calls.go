package devices

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/microlet/microlet/core/pluginhost"
	devicesv1 "github.com/microlet/microlet/proto/microlet/devices/v1"
)

// preStartTimeout is upstream's KubeletPreStartContainerRPCTimeoutInSecs.
const preStartTimeout = pluginapi.KubeletPreStartContainerRPCTimeoutInSecs * time.Second

// call runs fn on the serving process of the plugin named owner, within
// timeout. Its error wraps pluginhost.ErrUnavailable when no process
// serves, or when the process was lost during the call.
func (m *Manager) call(ctx context.Context, owner string, timeout time.Duration, fn func(context.Context, devicesv1.DevicesServiceClient) error) error {
	slot := m.slot(owner)
	if slot == nil {
		return fmt.Errorf("%w: device plugin %s is not configured", pluginhost.ErrUnavailable, pluginName(owner))
	}
	lease, err := slot.Acquire(ctx)
	if err != nil {
		return err
	}
	defer lease.Release()
	callCtx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	err = fn(callCtx, devicesv1.NewDevicesServiceClient(lease.Conn))
	if err != nil && ctx.Err() == nil && lost(lease, err) {
		return fmt.Errorf("%w: device plugin %s was lost during the call: %w", pluginhost.ErrUnavailable, pluginName(owner), err)
	}
	return err
}

// lost says whether a call's error comes from the process going away
// (retired or dead: its lease is done) rather than from the plugin.
func lost(lease *pluginhost.Lease, err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.Canceled:
	default:
		return false
	}
	select {
	case <-lease.Done:
		return true
	default:
		return false
	}
}

// unavailable says whether err means "not now": no process serves, it was
// lost during the call, or the plugin answered UNAVAILABLE (sdk.Retryable).
func unavailable(err error) bool {
	return errors.Is(err, pluginhost.ErrUnavailable) || status.Code(err) == codes.Unavailable
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
