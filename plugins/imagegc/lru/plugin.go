package lru

import (
	"context"
	"sync/atomic"

	imagegcv1 "github.com/microlet/microlet/proto/microlet/imagegc/v1"
	"github.com/microlet/microlet/sdk"
)

// Plugin serves the planners through the SDK. It implements sdk.Plugin[Config],
// sdk.ImageCollector and sdk.ContainerCollector.
type Plugin struct {
	cfg atomic.Pointer[Config]
}

// Configure keeps the decoded and validated config.
func (p *Plugin) Configure(_ context.Context, cfg *Config, _ *sdk.Host) error {
	p.cfg.Store(cfg)
	return nil
}

// PlanImageGC plans image removal.
func (p *Plugin) PlanImageGC(_ context.Context, gc *imagegcv1.ImageGCContext, images []*imagegcv1.Image) (*imagegcv1.PlanImageGCResponse, error) {
	cfg, err := p.config()
	if err != nil {
		return nil, err
	}
	return PlanImages(*cfg, gc, images)
}

// PlanContainerGC plans dead container and sandbox removal.
func (p *Plugin) PlanContainerGC(_ context.Context, gc *imagegcv1.ContainerGCContext, containers []*imagegcv1.DeadContainer, sandboxes []*imagegcv1.Sandbox) (*imagegcv1.PlanContainerGCResponse, error) {
	cfg, err := p.config()
	if err != nil {
		return nil, err
	}
	return PlanContainers(*cfg, gc, containers, sandboxes)
}

func (p *Plugin) config() (*Config, error) {
	cfg := p.cfg.Load()
	if cfg == nil {
		return nil, sdk.Retryable("the imagegc plugin is not configured yet")
	}
	return cfg, nil
}
