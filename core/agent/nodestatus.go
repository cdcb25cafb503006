package agent

import (
	"context"
	"fmt"
	"runtime/debug"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/klog/v2"

	"github.com/microlet/microlet/core/cluster/nodelease"
	"github.com/microlet/microlet/core/cluster/nodestatus"
	"github.com/microlet/microlet/core/config"
	"github.com/microlet/microlet/core/logging"
)

// runNodeStatus registers the node, keeps its status and, once it is
// registered, renews its Lease, until ctx ends.
func (a *Agent) runNodeStatus(ctx context.Context, c *cluster, p *pods) {
	cfg := a.cfg
	// client-go's and the lease controller's own lines (every retry while
	// the API server is away) are for debugging; the updater logs outages.
	ctx = klog.NewContext(ctx, logging.DebugLogr(a.log.Named("nodestatus")))
	reg := nodestatus.Registration{Labels: cfg.NodeLabels, Taints: p.api.taints}
	v := p.cri.RuntimeVersion()
	updater := nodestatus.New(nodestatus.Options{
		Client:       c.client,
		NodeName:     cfg.NodeName,
		Node:         p.api.node,
		Registration: reg,
		Source: nodeFacts{p: p, cfg: cfg,
			runtimeVersion: fmt.Sprintf("%s://%s", v.GetRuntimeName(), v.GetRuntimeVersion()),
			kubeletVersion: nodestatus.KubeletVersion(moduleVersion("k8s.io/api"), Version)},
		UpdateFrequency: cfg.NodeStatusUpdateFrequency,
		ReportFrequency: cfg.NodeStatusReportFrequency,
		Outage:          c.outages.Part("posting the node's status"),
		Logger:          a.log.Named("nodestatus"),
		OnEvent:         a.nodeStatusEvent,
		Kick:            p.statusKick,
	})
	lease := nodelease.New(nodelease.Options{
		Client:          c.client,
		NodeName:        cfg.NodeName,
		DurationSeconds: int32(cfg.NodeLeaseDurationSeconds),
		Node:            updater.Node,
	})
	go updater.Run(ctx)
	go func() {
		select {
		case <-ctx.Done():
		case <-updater.Registered():
			lease.Run(ctx)
		}
	}()
}

// nodeFacts are the node as the core measured it, for its status.
type nodeFacts struct {
	p                              *pods
	cfg                            *config.Config
	runtimeVersion, kubeletVersion string
}

func (f nodeFacts) Facts() nodestatus.Facts {
	p := f.p
	pressure := map[string]bool{}
	for _, c := range p.eviction.Conditions() {
		pressure[c.GetType()] = c.GetStatus() == "True"
	}
	return nodestatus.Facts{
		Hostname:                f.cfg.NodeName,
		NodeIPs:                 p.nodeIPs,
		Capacity:                p.capacity.Resources(),
		Allocatable:             p.cgroups.Allocatable(),
		DeviceCapacity:          p.devices.Capacity(),
		DeviceAllocatable:       p.devices.Allocatable(),
		MachineID:               p.identity.MachineID,
		SystemUUID:              p.identity.SystemUUID,
		BootID:                  p.identity.BootID,
		KernelVersion:           p.identity.KernelVersion,
		OSImage:                 p.identity.OSImage,
		ContainerRuntimeVersion: f.runtimeVersion,
		KubeletVersion:          f.kubeletVersion,
		KubeletPort:             int32(f.cfg.Port),
		NotReady:                p.notReady(),
		MemoryPressure:          pressure["MemoryPressure"],
		DiskPressure:            pressure["DiskPressure"],
		PIDPressure:             pressure["PIDPressure"],
	}
}

func (f nodeFacts) Images(ctx context.Context) ([]*runtimeapi.Image, error) {
	return f.p.cri.ListImages(ctx, nil)
}

// moduleVersion is the version of a module the binary was built with.
func moduleVersion(path string) string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, m := range info.Deps {
			if m.Path == path {
				return m.Version
			}
		}
	}
	return ""
}
