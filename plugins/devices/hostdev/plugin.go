// Package hostdev is a vendor-style device plugin built only on the SDK:
// it offers host device nodes matching configured globs (/dev/fuse,
// /dev/net/tun, ...) as extended resources, one device per node, and hands
// them to containers as device nodes at the same path. docs/devices.md
// describes it.
package hostdev

import (
	"context"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/microlet/microlet/plugins/devices/internal/feed"
	devicesv1 "github.com/microlet/microlet/proto/microlet/devices/v1"
	"github.com/microlet/microlet/sdk"
)

// Plugin serves the configured resources. It implements sdk.Plugin[Config],
// sdk.DevicePlugin and sdk.Shutdowner.
type Plugin struct {
	// root is the host's file system; tests give a fake one.
	root fs.FS
	feed *feed.Feed

	mu        sync.Mutex
	resources []ResourceConfig
	inv       inventory
	// conflicts already logged, so a rescan does not log them again.
	conflicts map[string]bool

	stopScans context.CancelFunc
	scansDone chan struct{}
}

// New is the plugin for the host's device nodes.
func New() *Plugin { return newPlugin(os.DirFS("/")) }

func newPlugin(root fs.FS) *Plugin {
	return &Plugin{root: root, feed: feed.New(), inv: inventory{}, conflicts: map[string]bool{}}
}

// Configure takes the resources, finds their nodes and rescans every
// scan_interval until Shutdown.
func (p *Plugin) Configure(_ context.Context, cfg *Config, _ *sdk.Host) error {
	p.mu.Lock()
	p.resources = cfg.Resources
	p.mu.Unlock()
	if err := p.rescan(); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	p.mu.Lock()
	p.stopScans, p.scansDone = cancel, done
	p.mu.Unlock()
	go p.scanEvery(ctx, cfg.ScanInterval.Duration, done)
	for _, r := range cfg.Resources {
		sdk.Log().Info("offering device nodes", "resource", r.Name, "paths", r.Paths, "permissions", r.permissions())
	}
	return nil
}

func (p *Plugin) scanEvery(ctx context.Context, interval time.Duration, done chan<- struct{}) {
	defer close(done)
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			sdk.Work(func() {
				if err := p.rescan(); err != nil {
					sdk.Log().Error("scanning device nodes failed; keeping the last inventory", "error", err)
				}
			})
		}
	}
}

// rescan looks for the nodes again and publishes the inventory.
func (p *Plugin) rescan() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	found, conflicts, err := scan(p.root, p.resources)
	if err != nil {
		return err
	}
	for _, c := range conflicts {
		if !p.conflicts[c] {
			p.conflicts[c] = true
			sdk.Log().Warn("a device node matches two resources", "conflict", c)
		}
	}
	next := p.inv.update(found)
	for name, devices := range next {
		for path, healthy := range devices {
			if was, known := p.inv[name][path]; known && was != healthy {
				sdk.Log().Info("device health changed", "resource", name, "device", path, "healthy", healthy)
			}
		}
	}
	p.inv = next
	p.feed.Publish(next.resources(p.resources))
	return nil
}

// ListAndWatch streams the resources and every change of their devices.
func (p *Plugin) ListAndWatch(ctx context.Context, send func([]*devicesv1.Resource) error) error {
	return p.feed.Stream(ctx, send)
}

// Allocate gives each container its nodes at the same path, with the
// resource's permissions.
func (p *Plugin) Allocate(_ context.Context, req *devicesv1.AllocateRequest) (*devicesv1.AllocateResponse, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var perms string
	var served bool
	for _, r := range p.resources {
		if r.Name == req.GetResourceName() {
			perms, served = r.permissions(), true
		}
	}
	if !served {
		return nil, sdk.Invalid("resource %q is not served by this plugin", req.GetResourceName())
	}
	resp := &devicesv1.AllocateResponse{}
	for _, c := range req.GetContainers() {
		out := &devicesv1.ContainerAllocateResponse{}
		for _, id := range c.GetDeviceIds() {
			healthy, known := p.inv[req.GetResourceName()][id]
			switch {
			case !known:
				return nil, sdk.Invalid("resource %s has no device %q", req.GetResourceName(), id)
			case !healthy:
				return nil, sdk.Invalid("device %s of %s is unhealthy: its node is gone", id, req.GetResourceName())
			}
			out.Devices = append(out.Devices, &devicesv1.DeviceSpec{ContainerPath: id, HostPath: id, Permissions: perms})
		}
		resp.Containers = append(resp.Containers, out)
	}
	return resp, nil
}

// Shutdown stops the scans.
func (p *Plugin) Shutdown(context.Context) error {
	p.mu.Lock()
	stop, done := p.stopScans, p.scansDone
	p.mu.Unlock()
	if stop == nil {
		return nil
	}
	stop()
	<-done
	return nil
}
