package workers

import (
	"sync"
	"time"

	"google.golang.org/protobuf/proto"

	"github.com/microlet/microlet/plugins/probes/decide"
	"github.com/microlet/microlet/plugins/probes/handler"
	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
)

// container is one probed container instance and its workers.
type container struct {
	// identity is the container's ContainerProbes without probes: which
	// instance it is and where to reach it. It never changes; a container
	// whose identity changes is a new one.
	identity *probesv1.ContainerProbes
	target   handler.Target
	// startedAt is when the container started, from which
	// initialDelaySeconds counts.
	startedAt time.Time

	// started is closed once the container has started in the startup
	// probe's sense: at once when it has no startup probe, else when that
	// succeeds.
	started     chan struct{}
	startedOnce sync.Once

	// workers are the running workers by probe type; guarded by the
	// plugin's mutex.
	workers map[probesv1.ProbeType]*worker
}

func startContainer(p *Plugin, spec *probesv1.ContainerProbes) *container {
	c := &container{
		identity:  targetOf(spec),
		target:    handler.Target{ContainerID: spec.GetContainerId(), PodIP: spec.GetPodIp(), Ports: spec.GetPorts()},
		startedAt: time.Now(),
		started:   make(chan struct{}),
		workers:   map[probesv1.ProbeType]*worker{},
	}
	if spec.GetStartedAt() != nil {
		c.startedAt = spec.GetStartedAt().AsTime()
	}
	if spec.GetStartup() == nil {
		c.markStarted()
	}
	for _, t := range decide.Types {
		if probe := decide.ProbeOf(spec, t); probe != nil {
			c.workers[t] = startWorker(p, c, t, probe)
		}
	}
	return c
}

// update changes the probes of the same container instance: a probe that
// did not change keeps its worker; a container whose startup probe is
// dropped counts as started.
func (c *container) update(p *Plugin, spec *probesv1.ContainerProbes) {
	if spec.GetStartup() == nil {
		c.markStarted()
	}
	for _, t := range decide.Types {
		probe, w := decide.ProbeOf(spec, t), c.workers[t]
		if w != nil && proto.Equal(w.probe, probe) {
			continue
		}
		if w != nil {
			w.stop(p)
			delete(c.workers, t)
		}
		if probe != nil {
			c.workers[t] = startWorker(p, c, t, probe)
		}
	}
}

// stop stops every worker of the container and waits for them.
func (c *container) stop(p *Plugin) {
	for _, w := range c.workers {
		w.cancel()
	}
	for t, w := range c.workers {
		w.stop(p)
		delete(c.workers, t)
	}
}

func (c *container) markStarted() {
	c.startedOnce.Do(func() { close(c.started) })
}

func (c *container) isStarted() bool {
	select {
	case <-c.started:
		return true
	default:
		return false
	}
}
