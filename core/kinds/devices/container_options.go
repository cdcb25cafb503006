package devices

import (
	"context"
	"fmt"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/core/pods/podruntime"
)

// ContainerOptions is what the plugins' Allocate answered for the
// container's devices, merged over its resources in name order (upstream
// GetDeviceRunContainerOptions): environment variables, mounts, device
// nodes, annotations and CDI devices. A setting two resources both make
// keeps the first, and a conflicting one is logged, as upstream. Before
// that it calls PreStartContainer for each resource that asks for it; an
// error (the plugin down, or the call failing) fails the container's
// creation, which the pod worker retries. A container without devices gets
// nil.
func (m *Manager) ContainerOptions(ctx context.Context, pod *v1.Pod, c *v1.Container) (*podruntime.ContainerOptions, error) {
	m.mu.Lock()
	held := m.allocations.container(pod.UID, c.Name)
	m.mu.Unlock()
	if len(held) == 0 {
		return nil, nil
	}
	resources := sortedKeys(held)
	for _, resource := range resources {
		a := held[resource]
		if !a.preStartRequired {
			continue
		}
		if err := m.preStart(ctx, a.owner, resource, a.devices.ids()); err != nil {
			return nil, fmt.Errorf("device plugin PreStartContainer rpc failed with err: %w", err)
		}
	}
	merged := &containerOptionsMerge{log: func(what, key, kept, dropped string) {
		m.log.Warn("device plugins set "+what+" differently; keeping the first", "pod", pod.Namespace+"/"+pod.Name,
			"container", c.Name, "key", key, "kept", kept, "dropped", dropped)
	}}
	for _, resource := range resources {
		merged.add(held[resource])
	}
	return &merged.out, nil
}

// containerOptionsMerge merges allocations into one container's options.
type containerOptionsMerge struct {
	out podruntime.ContainerOptions
	// log reports a conflicting setting.
	log func(what, key, kept, dropped string)
	// mounts and devices map container paths to host paths; cdi holds the
	// CDI device names.
	mounts, devices map[string]string
	cdi             map[string]bool
}

func (c *containerOptionsMerge) add(a *allocation) {
	resp := a.response
	c.out.Envs = c.addMap(c.out.Envs, resp.GetEnvs(), "environment variable")
	c.out.Annotations = c.addMap(c.out.Annotations, resp.GetAnnotations(), "annotation")
	if c.mounts == nil {
		c.mounts, c.devices, c.cdi = map[string]string{}, map[string]string{}, map[string]bool{}
	}
	for _, mnt := range resp.GetMounts() {
		if kept, dup := c.mounts[mnt.GetContainerPath()]; dup {
			if kept != mnt.GetHostPath() {
				c.log("a mount", mnt.GetContainerPath(), kept, mnt.GetHostPath())
			}
			continue
		}
		c.mounts[mnt.GetContainerPath()] = mnt.GetHostPath()
		c.out.Mounts = append(c.out.Mounts, &runtimeapi.Mount{ContainerPath: mnt.GetContainerPath(), HostPath: mnt.GetHostPath(), Readonly: mnt.GetReadOnly()})
	}
	for _, dev := range resp.GetDevices() {
		if kept, dup := c.devices[dev.GetContainerPath()]; dup {
			if kept != dev.GetHostPath() {
				c.log("a device node", dev.GetContainerPath(), kept, dev.GetHostPath())
			}
			continue
		}
		c.devices[dev.GetContainerPath()] = dev.GetHostPath()
		c.out.Devices = append(c.out.Devices, &runtimeapi.Device{ContainerPath: dev.GetContainerPath(), HostPath: dev.GetHostPath(), Permissions: dev.GetPermissions()})
	}
	for _, name := range resp.GetCdiDevices() {
		if !c.cdi[name] {
			c.cdi[name] = true
			c.out.CDIDevices = append(c.out.CDIDevices, &runtimeapi.CDIDevice{Name: name})
		}
	}
}

// addMap adds add's keys, in order, to into; a key set before keeps its
// value.
func (c *containerOptionsMerge) addMap(into, add map[string]string, what string) map[string]string {
	keys := sortedKeys(add)
	if len(keys) > 0 && into == nil {
		into = map[string]string{}
	}
	for _, k := range keys {
		if kept, dup := into[k]; dup {
			if kept != add[k] {
				c.log("an "+what, k, kept, add[k])
			}
			continue
		}
		into[k] = add[k]
	}
	return into
}
