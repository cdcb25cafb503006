package pleg

import (
	"context"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/core/runtime/container"
	"github.com/microlet/microlet/core/runtime/cri"
)

// EventSource is the runtime's container event stream, as *cri.Client
// offers it (see NewCRIEventSource).
type EventSource interface {
	// SupportsEvents reports whether the runtime streams container events.
	SupportsEvents() bool
	// ContainerEvents opens a stream of container events that lasts until
	// ctx ends or the runtime goes away.
	ContainerEvents(ctx context.Context) (EventStream, error)
}

// EventStream is an open container event stream.
type EventStream interface {
	// Recv waits for the next event.
	Recv() (*runtimeapi.ContainerEventResponse, error)
}

// StatusGenerator turns a container event, which carries the pod's sandbox
// status and all its containers' statuses, into the pod's status as the
// runtime manager would read it (upstream's Runtime.GeneratePodStatus).
type StatusGenerator interface {
	GeneratePodStatus(event *runtimeapi.ContainerEventResponse) (*container.PodStatus, error)
}

// NewCRIEventSource makes the CRI client an EventSource.
func NewCRIEventSource(client *cri.Client) EventSource { return criEvents{client} }

type criEvents struct{ client *cri.Client }

func (c criEvents) SupportsEvents() bool { return c.client.SupportsEvents() }

func (c criEvents) ContainerEvents(ctx context.Context) (EventStream, error) {
	return c.client.ContainerEvents(ctx)
}

// useEvents switches to the evented relist period and threshold.
func (p *PLEG) useEvents() {
	p.evented.Store(true)
	p.current.Store(&durations{period: EventedRelistPeriod, threshold: EventedRelistThreshold})
	p.log.Info("the container runtime streams container events; relisting only as a safety net", "relist_period", EventedRelistPeriod)
}

// fallBack goes back to relisting every RelistPeriod and wakes the relist
// loop so that the shorter period applies at once.
func (p *PLEG) fallBack(reason string) {
	p.evented.Store(false)
	p.current.Store(&p.generic)
	p.log.Warn("container events are not working; falling back to relisting", "reason", reason, "relist_period", p.generic.period)
	select {
	case p.modeChanged <- struct{}{}:
	default:
	}
}

// watchEvents consumes the event stream, reopening it when it fails and
// relisting after each failure so that nothing the failure hid is missed,
// as upstream's watchEventsChannel. After MaxStreamRetries failures in
// all, or as soon as the runtime turns out not to stream events any more,
// it falls back to relisting.
func (p *PLEG) watchEvents(ctx context.Context) {
	for failures := 0; ; failures++ {
		err := p.consumeStream(ctx)
		if ctx.Err() != nil {
			return
		}
		p.metrics.eventedConnErr.Inc()
		p.log.Warn("the container event stream failed; relisting", "error", err, "failures", failures+1)
		p.Relist(ctx)
		switch {
		case failures+1 >= MaxStreamRetries:
			p.fallBack("the event stream failed too often")
			return
		case !p.events.SupportsEvents():
			p.fallBack("the runtime no longer streams container events")
			return
		}
	}
}

// consumeStream opens the stream and handles its events until it fails.
func (p *PLEG) consumeStream(ctx context.Context) error {
	stream, err := p.events.ContainerEvents(ctx)
	if err != nil {
		return err
	}
	p.metrics.eventedConn.Inc()
	for {
		event, err := stream.Recv()
		if err != nil {
			return err
		}
		p.handleEvent(event)
	}
}

// handleEvent caches the pod status an event carries and emits the
// matching pod lifecycle event, as upstream's processCRIEvents.
func (p *PLEG) handleEvent(event *runtimeapi.ContainerEventResponse) {
	sandbox := event.GetPodSandboxStatus()
	if sandbox.GetMetadata() == nil {
		// The sandbox was gone when the runtime made the event; the
		// sandbox's own event or the next relist covers the pod.
		p.log.Error("container event without a pod sandbox status; ignoring it", "container_id", event.GetContainerId(), "type", event.GetContainerEventType())
		return
	}
	uid := types.UID(sandbox.GetMetadata().GetUid())
	status, err := p.eventStatus.GeneratePodStatus(event)
	if err != nil {
		p.log.Error("unable to read the pod status a container event carries; the next relist covers it", "uid", uid, "container_id", event.GetContainerId(), "error", err)
		return
	}
	cached, _ := p.cache.Get(uid)
	p.metrics.adjustRunning(cached, status)
	p.metrics.eventedLatency.Observe(p.clock.Since(time.Unix(0, event.GetCreatedAt())).Seconds())

	id := event.GetContainerId()
	switch event.GetContainerEventType() {
	case runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT:
		for _, s := range status.Sandboxes {
			if s.ID == id {
				// The sandbox is gone, and the pod with it.
				p.cache.Delete(uid)
			}
		}
		p.send(&PodLifecycleEvent{ID: uid, Type: ContainerDied, Data: id})
		p.send(&PodLifecycleEvent{ID: uid, Type: ContainerRemoved, Data: id})
	default:
		if !p.cache.Set(uid, status, nil, time.Unix(0, event.GetCreatedAt())) {
			return
		}
		switch event.GetContainerEventType() {
		case runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT:
			p.send(&PodLifecycleEvent{ID: uid, Type: ContainerStarted, Data: id})
		case runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT:
			p.send(&PodLifecycleEvent{ID: uid, Type: ContainerDied, Data: id})
		}
		// A created container needs only the cache refreshed, as a
		// relist's ContainerChanged.
	}
}

// advanceCacheTime marks the cache fresh every few seconds while events are
// in use, as upstream's updateGlobalCache: events keep the entries fresh,
// and a pod worker waiting for a newer status must not wait for the
// five-minute relist if an event was lost.
func (p *PLEG) advanceCacheTime(ctx context.Context) {
	ticker := p.clock.NewTicker(globalCacheUpdatePeriod)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
			if !p.evented.Load() {
				return
			}
			p.cache.UpdateTime(p.clock.Now())
		}
	}
}
