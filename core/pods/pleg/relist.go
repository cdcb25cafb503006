package pleg

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/runtime/container"
)

// Relist lists the runtime's pods once, refreshes the cache for the pods
// that changed (or whose last inspection failed), emits their events and
// marks the cache fresh as of the relist's start, as upstream's
// GenericPLEG.Relist. Pods are inspected concurrently, each within the
// inspect timeout, and the whole relist within a third of the health
// threshold: a hung pod delays only itself. A pod whose inspection fails
// keeps the error in the cache (its worker backs off) and is inspected
// again on the next relist, with its events, which are not lost.
func (p *PLEG) Relist(ctx context.Context) {
	p.relistMu.Lock()
	defer p.relistMu.Unlock()

	if last := p.lastRelist.Load(); last != nil {
		p.metrics.relistInterval.Observe(p.clock.Since(*last).Seconds())
	}
	start := p.clock.Now()
	defer func() { p.metrics.relistDuration.Observe(p.clock.Since(start).Seconds()) }()

	ctx, cancel := context.WithTimeout(ctx, relistBudget(p.current.Load().threshold))
	defer cancel()
	listCtx, cancelList := context.WithTimeout(ctx, p.inspectTimeout)
	pods, err := p.runtime.ListPods(listCtx)
	cancelList()
	if err != nil {
		if !shuttingDown(ctx) {
			p.log.Error("unable to list the runtime's pods", "error", err)
		}
		return
	}
	p.lastRelist.Store(&start)
	p.metrics.setRunning(pods)
	p.records.setCurrent(pods)

	var work []*inspection
	for uid, r := range p.records {
		events := computeEvents(uid, r.old, r.current)
		_, reinspect := p.reinspect[uid]
		if len(events) == 0 && !reinspect {
			continue
		}
		if r.current == nil {
			// Nothing of the pod is left on the runtime.
			p.cache.Delete(uid)
			p.records.update(uid)
			p.emit(events, nil)
			continue
		}
		work = append(work, &inspection{pod: r.current, listedAt: start, events: events})
	}

	needsReinspection := map[types.UID]*container.Pod{}
	for in := range p.inspectAll(ctx, work) {
		uid := in.pod.UID
		switch {
		case in.err != nil:
			needsReinspection[uid] = in.pod
		case !in.updated:
			// The event stream or the sync loop already cached something
			// newer that differs from the listing; the next relist looks
			// at the pod again.
		default:
			p.records.update(uid)
			p.emit(in.events, in.status)
		}
	}

	// Only now is every changed pod's entry as fresh as start.
	p.cache.UpdateTime(start)
	p.reinspect = needsReinspection
}

// inspection is one pod's refresh in a relist: its input and its outcome.
type inspection struct {
	pod      *container.Pod
	listedAt time.Time
	events   []*PodLifecycleEvent

	status  *container.PodStatus
	err     error
	updated bool
}

// inspectAll refreshes the pods' cache entries concurrently and sends each
// inspection on the returned channel when it is done; the channel closes
// after the last.
func (p *PLEG) inspectAll(ctx context.Context, work []*inspection) <-chan *inspection {
	done := make(chan *inspection, len(work))
	queue := make(chan *inspection, len(work))
	for _, in := range work {
		queue <- in
	}
	close(queue)
	workers := min(len(work), maxConcurrentInspections)
	finished := make(chan struct{}, workers)
	for range workers {
		go func() {
			for in := range queue {
				p.inspect(ctx, in)
				done <- in
			}
			finished <- struct{}{}
		}()
	}
	go func() {
		for range workers {
			<-finished
		}
		close(done)
	}()
	return done
}

// inspect reads one pod's status into the cache, or the error reading it
// gave, as upstream's updateCache, with two differences while relisting.
// It reads the sandboxes and containers the listing holds of the pod
// (ListedPodStatus), not the pod's own lists of them, and dates the status
// at the listing's start. And it reads nothing when the cache holds a
// status that already shows what the listing shows (cachedListing): the
// sync loop reads a pod back once a sync started its containers, and the
// relist that then sees the start would read the same status again, four
// CRI calls per pod start that upstream's kubelet, which has no read after
// a start, does not make either. The events are sent all the same.
func (p *PLEG) inspect(ctx context.Context, in *inspection) {
	pod := in.pod
	evented := p.evented.Load()
	if in.status = p.cachedListing(pod, evented); in.status != nil {
		// Confirmed as of the listing: a worker whose last action came
		// before it need not wait for the end of the relist.
		p.cache.Set(pod.UID, in.status, nil, in.listedAt)
		in.updated = true
		return
	}
	ctx, cancel := context.WithTimeout(ctx, p.inspectTimeout)
	defer cancel()
	timestamp := in.listedAt
	if evented {
		timestamp = p.clock.Now()
		in.status, in.err = p.runtime.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	} else {
		in.status, in.err = p.runtime.ListedPodStatus(ctx, pod, in.listedAt)
	}
	if in.err != nil {
		in.err = fmt.Errorf("reading the status of pod %s/%s (%s): %w", pod.Namespace, pod.Name, pod.UID, in.err)
		if !shuttingDown(ctx) {
			p.log.Error("unable to read a pod's status; it is read again on the next relist", "pod", pod.Namespace+"/"+pod.Name, "uid", pod.UID, "error", in.err)
		}
	} else if evented && !in.status.Timestamp.IsZero() {
		// Events carry the runtime's timestamps; so must relists that
		// write the same entries, or the older reading could win.
		timestamp = in.status.Timestamp
	}
	in.updated = p.cache.Set(pod.UID, in.status, in.err, timestamp)
	if !in.updated && in.err == nil {
		// The cache holds a newer status (the sync loop's read after a
		// start, dated after the listing). If it too shows what the
		// relist lists, the pod is as fresh as the listing and its events
		// go now rather than after the next relist reads the pod again.
		if cached := p.cachedListing(pod, evented); cached != nil {
			in.status, in.updated = cached, true
		}
	}
}

// cachedListing returns the pod's cached status if it shows the same
// containers and sandboxes in the same states as the relist lists (listed)
// and nothing else, or nil. Such a status was read after every change the
// listing shows, and what the status holds beyond the listing does not
// change while the states stay (an exited container's exit code, a ready
// sandbox's addresses), so reading the pod again would give the same
// status. Only while relisting: with container events the cache holds the
// runtime's timestamps, which a reused status must not be ordered against.
func (p *PLEG) cachedListing(listed *container.Pod, evented bool) *container.PodStatus {
	if evented {
		return nil
	}
	status, err := p.cache.Get(listed.UID)
	if err != nil || status == nil || !listedAs(status, listed) {
		return nil
	}
	return status
}

// emit sends events without blocking: when the channel is full the event
// is dropped and counted, as upstream. status, when known, names the exit
// code of the containers that died, for the log.
func (p *PLEG) emit(events []*PodLifecycleEvent, status *container.PodStatus) {
	for _, e := range events {
		if e.Type == ContainerChanged {
			continue
		}
		p.send(e)
		if e.Type == ContainerDied && status != nil {
			for _, c := range status.Containers {
				if c.ID == e.Data {
					p.log.Debug("container finished", "uid", e.ID, "container", c.Name, "container_id", c.ID, "exit_code", c.ExitCode)
				}
			}
		}
	}
}

func (p *PLEG) send(e *PodLifecycleEvent) {
	select {
	case p.ch <- e:
	default:
		p.metrics.discardEvents.Inc()
		p.log.Error("the event channel is full; discarding an event", "uid", e.ID, "event", e.Type, "container_id", e.Data)
	}
}

// shuttingDown reports whether the caller's context was cancelled, when
// failures are expected and not worth an error line.
func shuttingDown(ctx context.Context) bool { return errors.Is(ctx.Err(), context.Canceled) }

// lastSeen is when the last relist that listed the runtime started, zero
// before the first.
func (p *PLEG) lastSeen() time.Time {
	if t := p.lastRelist.Load(); t != nil {
		return *t
	}
	return time.Time{}
}
