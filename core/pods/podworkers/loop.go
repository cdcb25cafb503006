package podworkers

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/microlet/microlet/core/runtime/container"
)

// podWork is an update taken by a worker with the state it applies to.
type podWork struct {
	WorkType PodWorkerState
	Options  UpdatePodOptions
}

// startPodSync takes the pending update, decides whether the pod has
// started or may start, and makes the update visible to other components
// (activeUpdate) once it has. ok is false when there was nothing to take.
// A pod that cannot start yet keeps its update pending; one that never can
// is finished here.
func (p *PodWorkers) startPodSync(uid types.UID) (ctx context.Context, update podWork, canStart, canEverStart, ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()

	st, ok := p.podSyncStatuses[uid]
	if !ok {
		p.log.Debug("pod has no sync status any more; its worker exits", "uid", uid)
		return nil, update, false, false, false
	}
	if st.pendingUpdate == nil {
		st.working = false
		p.log.Debug("pod worker woke without pending work", "uid", uid)
		return nil, update, false, false, false
	}

	update.WorkType = st.WorkType()
	update.Options = *st.pendingUpdate
	st.pendingUpdate = nil
	select {
	case <-p.podUpdates[uid]: // drain: only ever written under mu
	default:
	}

	if st.ctx == nil || errors.Is(st.ctx.Err(), context.Canceled) {
		st.ctx, st.cancelFn = context.WithCancel(context.Background())
	}
	ctx = st.ctx

	if st.IsStarted() {
		st.mergeLastUpdate(update.Options)
		return ctx, update, true, true, true
	}
	// An orphan being torn down "starts" straight into terminating.
	if update.Options.RunningPod != nil && update.WorkType == TerminatingPod {
		st.mergeLastUpdate(update.Options)
		return ctx, update, true, true, true
	}
	if update.Options.Pod == nil {
		st.mergeLastUpdate(update.Options)
		p.log.Error("a runtime pod can never start", "uid", uid, "work_type", update.WorkType)
		return ctx, update, false, false, true
	}

	canStart, canEverStart = p.allowPodStart(update.Options.Pod)
	switch {
	case !canEverStart:
		p.cleanupUnstartedPod(update.Options.Pod, st)
		p.metrics.observeWork("terminated", update.Options.StartTime, p.clock)
		p.log.Debug("pod can never start", "pod", podRef(update.Options), "uid", uid)
		return ctx, update, canStart, canEverStart, true
	case !canStart:
		st.pendingUpdate = &update.Options
		st.working = false
		p.log.Debug("pod cannot start yet: another instance of its name is still running", "pod", podRef(update.Options), "uid", uid)
		return ctx, update, canStart, canEverStart, true
	}

	st.startedAt = p.clock.Now()
	st.mergeLastUpdate(update.Options)
	p.metrics.containersPerPod.Observe(float64(len(update.Options.Pod.Spec.Containers)))
	return ctx, update, true, true, true
}

func podRef(u UpdatePodOptions) string {
	if u.RunningPod != nil {
		return u.RunningPod.Namespace + "/" + u.RunningPod.Name
	}
	return u.Pod.Namespace + "/" + u.Pod.Name
}

// podWorkerLoop is one pod's goroutine: it waits to be allowed to start,
// syncs, terminates and finishes the pod, one update at a time, and exits
// once the pod is finished (or never could start). Errors requeue the pod
// with a backoff; a move from syncing to terminating or from terminating
// to terminated proceeds at once without waiting for another update.
func (p *PodWorkers) podWorkerLoop(uid types.UID, podUpdates <-chan struct{}) {
	var lastSyncTime time.Time
	for range podUpdates {
		ctx, update, canStart, canEverStart, ok := p.startPodSync(uid)
		if !ok {
			continue
		}
		if !canEverStart {
			return
		}
		if !canStart {
			continue
		}

		ref := podRef(update.Options)
		log := p.log.With("pod", ref, "uid", uid, "work_type", update.WorkType)
		log.Trace("processing pod event")
		var isTerminal bool
		err := func() error {
			// Act only on a status newer than the last action: the
			// previous sync's effects, or the latest state when
			// terminating or terminated. An orphan needs none.
			var status *container.PodStatus
			if update.Options.RunningPod == nil {
				if update.WorkType != SyncPod && p.relistSoon != nil {
					p.relistSoon()
				}
				var err error
				status, err = p.cache.GetNewerThan(ctx, update.Options.Pod.UID, lastSyncTime)
				if err != nil {
					if ctx.Err() != nil {
						return ctx.Err()
					}
					return fmt.Errorf("error determining status: %w", err)
				}
			}
			var err error
			switch update.WorkType {
			case TerminatedPod:
				err = p.syncer.SyncTerminatedPod(ctx, update.Options.Pod, status)
			case TerminatingPod:
				var gracePeriod *int64
				if opt := update.Options.KillPodOptions; opt != nil {
					gracePeriod = opt.PodTerminationGracePeriodSecondsOverride
				}
				statusFn := p.acknowledgeTerminating(uid)
				if update.Options.RunningPod != nil {
					err = p.syncer.SyncTerminatingRuntimePod(ctx, update.Options.RunningPod)
				} else {
					err = p.syncer.SyncTerminatingPod(ctx, update.Options.Pod, status, gracePeriod, statusFn)
				}
			default:
				isTerminal, err = p.syncer.SyncPod(ctx, update.Options.UpdateType, update.Options.Pod, status)
			}
			lastSyncTime = p.clock.Now()
			return err
		}()

		var phaseTransition bool
		switch {
		case errors.Is(err, context.Canceled):
			// Whoever cancelled queued an update already.
			log.Debug("sync cancelled")
		case errors.Is(err, ErrBackOff):
			log.Debug("pod is waiting out a backoff", "error", err)
		case err != nil:
			log.Error("error syncing pod, skipping", "error", err)
		case update.WorkType == TerminatedPod:
			p.completeTerminated(uid)
			p.metrics.observeWork("terminated", update.Options.StartTime, p.clock)
			log.Trace("processing pod event done")
			return
		case update.WorkType == TerminatingPod:
			if update.Options.RunningPod != nil {
				// An orphan has nothing left to clean up here.
				p.completeTerminatingRuntimePod(uid)
				p.metrics.observeWork(update.Options.UpdateType.String(), update.Options.StartTime, p.clock)
				log.Trace("processing pod event done")
				return
			}
			p.completeTerminating(uid)
			phaseTransition = true
		case isTerminal:
			log.Debug("pod is terminal")
			p.completeSync(uid)
			phaseTransition = true
		}

		// Observed before the work completes, so that whoever sees the
		// worker idle sees its duration counted too.
		p.metrics.observeWork(update.Options.UpdateType.String(), update.Options.StartTime, p.clock)
		p.completeWork(uid, phaseTransition, err)
		log.Trace("processing pod event done")
	}
}

// acknowledgeTerminating records that the worker saw the request to stop,
// so that no container starts any more, and returns the status function of
// the latest kill, if any.
func (p *PodWorkers) acknowledgeTerminating(uid types.UID) PodStatusFunc {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.podSyncStatuses[uid]
	if !ok {
		return nil
	}
	if !st.terminatingAt.IsZero() && !st.startedTerminating {
		p.log.Debug("pod worker saw the request to terminate", "uid", uid)
		st.startedTerminating = true
	}
	if n := len(st.statusPostTerminating); n > 0 {
		return st.statusPostTerminating[n-1]
	}
	return nil
}

// completeSync moves a pod whose SyncPod found it done to terminating.
func (p *PodWorkers) completeSync(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.podSyncStatuses[uid]
	if !ok {
		return
	}
	if st.terminatingAt.IsZero() {
		st.terminatingAt = p.clock.Now()
	}
	st.startedTerminating = true
	p.requeueLastPodUpdate(uid, st)
}

// completeTerminating moves a pod whose containers are all stopped to
// terminated and tells the kills waiting for it.
func (p *PodWorkers) completeTerminating(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.podSyncStatuses[uid]
	if !ok {
		return
	}
	st.terminatedAt = p.clock.Now()
	for _, ch := range st.notifyPostTerminating {
		close(ch)
	}
	st.notifyPostTerminating = nil
	st.statusPostTerminating = nil
	p.requeueLastPodUpdate(uid, st)
}

// completeTerminatingRuntimePod forgets an orphan once its containers are
// stopped: it has no spec and no status to keep.
func (p *PodWorkers) completeTerminatingRuntimePod(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cleanupPodUpdates(uid)
	st, ok := p.podSyncStatuses[uid]
	if !ok {
		return
	}
	st.terminatedAt = p.clock.Now()
	st.finished = true
	st.working = false
	p.releaseStaticName(st.fullname, uid)
	delete(p.podSyncStatuses, uid)
}

// completeTerminated marks a pod finished once SyncTerminatedPod succeeded.
func (p *PodWorkers) completeTerminated(uid types.UID) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cleanupPodUpdates(uid)
	st, ok := p.podSyncStatuses[uid]
	if !ok {
		return
	}
	st.finished = true
	st.working = false
	p.releaseStaticName(st.fullname, uid)
}

// completeWork requeues the pod (at once after a state change, at the
// resync interval after a sync, after a backoff after an error) and wakes
// the worker again if an update arrived meanwhile.
func (p *PodWorkers) completeWork(uid types.UID, phaseTransition bool, syncErr error) {
	switch {
	case phaseTransition:
		p.workQueue.Enqueue(uid, 0)
	case syncErr == nil:
		p.workQueue.Enqueue(uid, wait.Jitter(p.resyncInterval, workerResyncIntervalJitterFactor))
	case strings.Contains(syncErr.Error(), NetworkNotReadyErrorMsg):
		p.workQueue.Enqueue(uid, wait.Jitter(backOffOnTransientErrorPeriod, workerBackOffPeriodJitterFactor))
	default:
		p.workQueue.Enqueue(uid, wait.Jitter(p.backOffPeriod, workerBackOffPeriodJitterFactor))
	}

	p.mu.Lock()
	defer p.mu.Unlock()
	st, ok := p.podSyncStatuses[uid]
	if !ok {
		return
	}
	if st.pendingUpdate == nil {
		st.working = false
		return
	}
	select {
	case p.podUpdates[uid] <- struct{}{}:
	default:
	}
}

// requeueLastPodUpdate replays the last update to move the pod to its next
// state at once, unless an update is pending already. Call it with mu held.
func (p *PodWorkers) requeueLastPodUpdate(uid types.UID, st *podSyncStatus) {
	if st.pendingUpdate != nil || st.activeUpdate == nil {
		return
	}
	replay := *st.activeUpdate
	st.pendingUpdate = &replay
	p.wake(uid, st)
}

// wake marks the pod's worker busy and tells it an update is pending,
// never blocking (its channel holds one). Call it with mu held.
func (p *PodWorkers) wake(uid types.UID, st *podSyncStatus) {
	st.working = true
	select {
	case p.podUpdates[uid] <- struct{}{}:
	default:
	}
}

// cleanupPodUpdates ends the pod's goroutine and drops undelivered work.
// Call it with mu held.
func (p *PodWorkers) cleanupPodUpdates(uid types.UID) {
	if ch, ok := p.podUpdates[uid]; ok {
		close(ch)
	}
	delete(p.podUpdates, uid)
}
