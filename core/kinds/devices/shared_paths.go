package devices

import (
	"slices"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/microlet/microlet/internal/promreg"
	devicesv1 "github.com/microlet/microlet/proto/microlet/devices/v1"
)

// sharedPathsMetric counts allocations that handed out a host device node
// another resource had handed out too and still holds: two plugins (or two
// resources of one) offer the same node, each counting it as its own, so
// the node's capacity is counted twice. Such allocations are not refused:
// many nodes are made to be shared (/dev/net/tun, /dev/fuse, /dev/kvm), and
// a refusal would stop pods that run well; the operator is told instead.
func newSharedPathsMetric(reg prometheus.Registerer) (*prometheus.CounterVec, error) {
	c := prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "microlet", Name: "device_shared_host_paths_total",
		Help: "Device allocations that handed out a host device node another resource holds allocated too, by the allocated resource.",
	}, []string{"resource"})
	return c, promreg.Register(reg, c)
}

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
		m.sharedPaths.WithLabelValues(resource).Inc()
		m.log.Warn("a host device node is handed out by two resources at once; each counts it as its own, so its capacity counts twice: "+
			"configure it in one device plugin only", "device", dev.GetHostPath(), "resource", resource, "also_held_as", others,
			"pod", pod, "container", container)
	}
}
