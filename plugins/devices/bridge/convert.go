package bridge

import (
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	devicesv1 "github.com/microlet/microlet/proto/microlet/devices/v1"
)

// The upstream device plugin API and microlet's devices API carry the same
// model; these convert between them.

// toResource is what one registered plugin offers.
func toResource(name string, options *pluginapi.DevicePluginOptions, devices []*pluginapi.Device) *devicesv1.Resource {
	r := &devicesv1.Resource{
		Name:                         name,
		PreStartRequired:             options.GetPreStartRequired(),
		PreferredAllocationAvailable: options.GetGetPreferredAllocationAvailable(),
	}
	for _, d := range devices {
		dev := &devicesv1.Device{Id: d.GetID(), Healthy: d.GetHealth() == pluginapi.Healthy}
		for _, n := range d.GetTopology().GetNodes() {
			dev.NumaNodes = append(dev.NumaNodes, n.GetID())
		}
		r.Devices = append(r.Devices, dev)
	}
	return r
}

func toUpstreamPreferred(req *devicesv1.GetPreferredAllocationRequest) *pluginapi.PreferredAllocationRequest {
	out := &pluginapi.PreferredAllocationRequest{}
	for _, c := range req.GetContainers() {
		out.ContainerRequests = append(out.ContainerRequests, &pluginapi.ContainerPreferredAllocationRequest{
			AvailableDeviceIDs:   c.GetAvailableDeviceIds(),
			MustIncludeDeviceIDs: c.GetMustIncludeDeviceIds(),
			AllocationSize:       c.GetAllocationSize(),
		})
	}
	return out
}

func fromUpstreamPreferred(resp *pluginapi.PreferredAllocationResponse) *devicesv1.GetPreferredAllocationResponse {
	out := &devicesv1.GetPreferredAllocationResponse{}
	for _, c := range resp.GetContainerResponses() {
		out.Containers = append(out.Containers, &devicesv1.ContainerPreferredAllocationResponse{DeviceIds: c.GetDeviceIDs()})
	}
	return out
}

func toUpstreamAllocate(req *devicesv1.AllocateRequest) *pluginapi.AllocateRequest {
	out := &pluginapi.AllocateRequest{}
	for _, c := range req.GetContainers() {
		out.ContainerRequests = append(out.ContainerRequests, &pluginapi.ContainerAllocateRequest{DevicesIds: c.GetDeviceIds()})
	}
	return out
}

func fromUpstreamAllocate(resp *pluginapi.AllocateResponse) *devicesv1.AllocateResponse {
	out := &devicesv1.AllocateResponse{}
	for _, c := range resp.GetContainerResponses() {
		wire := &devicesv1.ContainerAllocateResponse{Envs: c.GetEnvs(), Annotations: c.GetAnnotations()}
		for _, m := range c.GetMounts() {
			wire.Mounts = append(wire.Mounts, &devicesv1.Mount{ContainerPath: m.GetContainerPath(), HostPath: m.GetHostPath(), ReadOnly: m.GetReadOnly()})
		}
		for _, d := range c.GetDevices() {
			wire.Devices = append(wire.Devices, &devicesv1.DeviceSpec{ContainerPath: d.GetContainerPath(), HostPath: d.GetHostPath(), Permissions: d.GetPermissions()})
		}
		for _, cdi := range c.GetCdiDevices() {
			wire.CdiDevices = append(wire.CdiDevices, cdi.GetName())
		}
		out.Containers = append(out.Containers, wire)
	}
	return out
}
