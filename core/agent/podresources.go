package agent

import (
	"context"

	"github.com/microlet/microlet/core/kinds/devices"
	"github.com/microlet/microlet/core/node/podresources"
)

// servePodResources serves the kubelet's pod-resources API on its socket
// under root_dir: the active pods' devices (devices manager), exclusive
// CPUs and pinned memory (the cgroup manager's CPU and memory managers). A socket that cannot be served
// is logged; pods are not affected.
func (a *Agent) servePodResources(ctx context.Context, p *pods) {
	err := podresources.Serve(ctx, podresources.SocketPath(a.cfg.RootDir), podresources.Options{
		ActivePods:        p.loop.ActivePods,
		Pods:              p.loop.DesiredPods,
		ContainerDevices:  p.devices.ContainerDevices,
		HealthyDevices:    p.devices.HealthyDevices,
		NoNUMANode:        devices.NoNUMANode,
		ContainerCPUs:     p.cgroups.ContainerCPUs,
		AllocatableCPUs:   p.cgroups.AllocatableCPUs,
		ContainerMemory:   p.cgroups.ContainerMemory,
		AllocatableMemory: p.cgroups.AllocatableMemory,
		Registerer:        a.metrics,
		Logger:            a.log.Named("podresources"),
	})
	if err != nil {
		a.log.Error("the pod-resources API is not served", "error", err)
	}
}
