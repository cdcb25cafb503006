// Package workers is the default probes plugin: one worker goroutine per
// probe of every container the core hands it, probing on the kubelet's
// schedule (package decide) with the kubelet's handlers (package handler),
// and reporting every attempt to the core's WatchResults stream.
package workers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/microlet/microlet/plugins/probes/decide"
	"github.com/microlet/microlet/plugins/probes/handler"
	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
	"github.com/microlet/microlet/sdk"
)

// Info names the default probes plugin.
var Info = sdk.Info{Kind: sdk.KindProbes, Name: "default", Version: "0.1.0"}

// Config is the plugin's config block. It has no keys: what to probe, and
// how, comes with each container from its pod spec.
type Config struct{}

// Plugin implements sdk.Plugin[Config], sdk.Prober and sdk.Shutdowner.
type Plugin struct {
	// startedAt is when the plugin started, for the first-run jitter.
	startedAt time.Time
	results   *hub

	mu         sync.Mutex
	runner     *handler.Runner
	containers map[string]*container
}

// New returns an unconfigured plugin.
func New() *Plugin {
	return &Plugin{startedAt: time.Now(), results: newHub(), containers: map[string]*container{}}
}

// Configure takes the host service, through which exec probes run.
func (p *Plugin) Configure(_ context.Context, _ *Config, host *sdk.Host) error {
	if host == nil {
		return errors.New("the probes plugin needs the core's host service to run exec probes, and the core offered none")
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.runner = handler.NewRunner(host)
	return nil
}

// SetContainerProbes starts probing a container, or changes its probes:
// a probe that did not change keeps its worker and its state.
func (p *Plugin) SetContainerProbes(_ context.Context, c *probesv1.ContainerProbes) error {
	if problems := decide.Validate(c); len(problems) > 0 {
		return sdk.Invalid("SetContainerProbes for container %s: %s", c.GetContainerId(), strings.Join(problems, "; "))
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.configured(); err != nil {
		return err
	}
	if old := p.containers[c.GetContainerId()]; old != nil && proto.Equal(old.identity, targetOf(c)) {
		old.update(p, c)
		return nil
	}
	p.removeLocked(c.GetContainerId())
	p.containers[c.GetContainerId()] = startContainer(p, c)
	return nil
}

// RemoveContainerProbes stops probing a container; an unknown one is
// already not probed.
func (p *Plugin) RemoveContainerProbes(_ context.Context, containerID string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.removeLocked(containerID)
	return nil
}

// SyncProbes replaces every container's probes with all: every worker
// starts afresh. Containers whose probes are invalid are refused, each
// named in the INVALID_ARGUMENT error, and the others are probed.
func (p *Plugin) SyncProbes(_ context.Context, all []*probesv1.ContainerProbes) error {
	var refused []string
	valid := make([]*probesv1.ContainerProbes, 0, len(all))
	for _, c := range all {
		if problems := decide.Validate(c); len(problems) > 0 {
			refused = append(refused, fmt.Sprintf("container %s: %s", c.GetContainerId(), strings.Join(problems, "; ")))
			continue
		}
		valid = append(valid, c)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.configured(); err != nil {
		return err
	}
	p.stopAllLocked()
	for _, c := range valid {
		p.removeLocked(c.GetContainerId()) // a repeated container: the last one wins
		p.containers[c.GetContainerId()] = startContainer(p, c)
	}
	if len(refused) > 0 {
		return sdk.Invalid("SyncProbes refused %d of %d containers, and probes the others: %s", len(refused), len(all), strings.Join(refused, "; "))
	}
	return nil
}

// WatchResults sends the standing verdict of every probe that has one,
// then the result of every attempt, until ctx ends or send fails.
func (p *Plugin) WatchResults(ctx context.Context, send func(*probesv1.ProbeResult) error) error {
	return p.results.watch(ctx, send)
}

// Shutdown stops every worker.
func (p *Plugin) Shutdown(context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stopAllLocked()
	return nil
}

func (p *Plugin) configured() error {
	if p.runner == nil {
		return sdk.Retryable("the probes plugin is not configured yet")
	}
	return nil
}

func (p *Plugin) removeLocked(containerID string) {
	if c := p.containers[containerID]; c != nil {
		c.stop(p)
		delete(p.containers, containerID)
	}
}

func (p *Plugin) stopAllLocked() {
	for id := range p.containers {
		p.removeLocked(id)
	}
}

// targetOf is c without its probes: which container instance it is and
// where to reach it.
func targetOf(c *probesv1.ContainerProbes) *probesv1.ContainerProbes {
	t := proto.CloneOf(c)
	t.Liveness, t.Readiness, t.Startup = nil, nil, nil
	return t
}
