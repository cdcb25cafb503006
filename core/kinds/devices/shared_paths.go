package devices

import (
	"slices"

	devicesv1 "github.com/microlet/microlet/proto/microlet/devices/v1"
)

// resourcesHolding are the resources other than resource whose
// allocations hold the host device node hostPath, sorted.
func (p podAllocations) resourcesHolding(hostPath, resource string) []string {
	var out []string
	for _, containers := range p {
		for _, resources := range containers {
			for other, a := range resources {
				if other == resource || slices.Contains(out, other) {
					continue
				}
				if slices.ContainsFunc(a.response.GetDevices(), func(d *devicesv1.DeviceSpec) bool { return d.GetHostPath() == hostPath }) {
					out = append(out, other)
				}
			}
		}
	}
	slices.Sort(out)
	return out
}

// warnSharedPaths reports each host device node of resp that another
// resource holds too. Called with m.mu held.
func (m *Manager) warnSharedPaths(pod, container, resource string, resp *devicesv1.ContainerAllocateResponse) {
	for _, dev := range resp.GetDevices() {
		others := m.allocations.resourcesHolding(dev.GetHostPath(), resource)
		if len(others) == 0 {
			continue
		}
		m.metrics.sharedPaths.WithLabelValues(resource).Inc()
		m.log.Warn("a host device node is handed out by two resources at once; each counts it as its own, so its capacity counts twice: "+
			"configure it in one device plugin only", "device", dev.GetHostPath(), "resource", resource, "also_held_as", others,
			"pod", pod, "container", container)
	}
}
