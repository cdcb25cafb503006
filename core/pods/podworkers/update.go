package podworkers

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/microlet/microlet/core/pods/status"
	"github.com/microlet/microlet/core/runtime/container"
)

// podFullName is upstream's BuildPodFullName.
func podFullName(name, namespace string) string { return name + "_" + namespace }

// runtimePodAsAPIPod stands in for an orphan that has no spec, as
// upstream's Pod.ToAPIPod.
func runtimePodAsAPIPod(p *container.Pod) *v1.Pod {
	pod := &v1.Pod{}
	pod.UID, pod.Name, pod.Namespace = p.UID, p.Name, p.Namespace
	return pod
}

// isRuntimeTerminal reports whether a cached status shows nothing running:
// no running container and no ready sandbox.
func isRuntimeTerminal(s *container.PodStatus) bool {
	for _, c := range s.Containers {
		if c.State == container.StateRunning {
			return false
		}
	}
	for _, sb := range s.Sandboxes {
		if sb.State == container.SandboxReady {
			return false
		}
	}
	return true
}

// UpdatePod hands a change to the pod's worker, starting the worker if the
// pod is new. It never blocks. A pod becomes terminating when it is
// deleted, reaches a terminal phase, is killed, or is an orphan; from then
// on every update is a kill whose grace period can only shrink, and once
// it has finished its UID is not started again until SyncKnownPods has
// forgotten it.
func (p *PodWorkers) UpdatePod(options UpdatePodOptions) {
	var isRuntimePod bool
	var uid types.UID
	var name, ns string
	switch running := options.RunningPod; {
	case running == nil && options.Pod == nil:
		p.log.Error("ignoring a pod update without a pod: UpdatePodOptions needs Pod, or RunningPod for a kill", "update_type", options.UpdateType)
		return
	case running != nil && options.Pod == nil:
		if options.UpdateType != Kill {
			p.log.Info("ignoring a pod update: runtime pods can only be killed", "pod", running.Namespace+"/"+running.Name, "uid", running.UID, "update_type", options.UpdateType)
			return
		}
		uid, ns, name = running.UID, running.Namespace, running.Name
		isRuntimePod = true
	case running != nil:
		options.RunningPod = nil
		uid, ns, name = options.Pod.UID, options.Pod.Namespace, options.Pod.Name
		p.log.Info("pod update carries a RunningPod, which is only valid without a Pod; ignoring it", "pod", ns+"/"+name, "uid", uid, "update_type", options.UpdateType)
	default:
		uid, ns, name = options.Pod.UID, options.Pod.Namespace, options.Pod.Name
	}
	log := p.log.With("pod", ns+"/"+name, "uid", uid, "update_type", options.UpdateType)

	p.mu.Lock()
	defer p.mu.Unlock()

	now := p.clock.Now()
	st, known := p.podSyncStatuses[uid]
	firstTime := !known
	if firstTime {
		log.Debug("pod is synced for the first time")
		st = &podSyncStatus{syncedAt: now, fullname: podFullName(name, ns)}
		// A pod that is terminal in its source and shows nothing running
		// on the runtime terminated in a previous life of the node agent:
		// it must only finish (SyncTerminatedPod), never count as active.
		if options.Pod != nil && status.IsTerminalPhase(options.Pod.Status.Phase) {
			if cached, err := p.cache.Get(uid); err == nil && isRuntimeTerminal(cached) {
				st = &podSyncStatus{
					terminatedAt:       now,
					terminatingAt:      now,
					syncedAt:           now,
					startedTerminating: true,
					fullname:           podFullName(name, ns),
				}
			}
		}
		p.podSyncStatuses[uid] = st
	}

	// A runtime pod carries no spec; use the real pod if one was seen.
	// Once seen on the runtime, the pod must be driven to the end.
	pod := options.Pod
	if isRuntimePod {
		st.observedRuntime = true
		switch {
		case st.pendingUpdate != nil && st.pendingUpdate.Pod != nil:
			pod = st.pendingUpdate.Pod
			options.Pod, options.RunningPod = pod, nil
		case st.activeUpdate != nil && st.activeUpdate.Pod != nil:
			pod = st.activeUpdate.Pod
			options.Pod, options.RunningPod = pod, nil
		default:
			pod = runtimePodAsAPIPod(options.RunningPod)
		}
	}

	// A Create for a terminating UID: two pods with the same UID close
	// together (a static pod with a fixed UID, re-added). Start it again
	// once this one is finished and housekeeping forgot it.
	if !firstTime && st.IsTerminationRequested() && options.UpdateType == Create {
		st.restartRequested = true
		log.Debug("pod is terminating but was created again with the same UID; it restarts once terminated")
		return
	}

	if st.IsFinished() {
		log.Debug("pod is finished; ignoring further updates")
		return
	}

	var becameTerminating bool
	if !st.IsTerminationRequested() {
		switch {
		case isRuntimePod:
			log.Debug("pod is orphaned and must be torn down")
			st.deleted = true
			st.terminatingAt = now
			becameTerminating = true
		case pod.DeletionTimestamp != nil:
			log.Debug("pod is marked for graceful deletion; tearing it down")
			st.deleted = true
			st.terminatingAt = now
			becameTerminating = true
		case status.IsTerminalPhase(pod.Status.Phase):
			log.Debug("pod is in a terminal phase; tearing it down", "phase", pod.Status.Phase)
			st.terminatingAt = now
			becameTerminating = true
		case options.UpdateType == Kill:
			if options.KillPodOptions != nil && options.KillPodOptions.Evict {
				log.Debug("pod is being evicted; tearing it down")
				st.evicted = true
			} else {
				log.Debug("pod is being removed; tearing it down")
			}
			st.terminatingAt = now
			becameTerminating = true
		}
	}

	var gracePeriodShortened bool
	switch {
	case st.IsTerminated():
		// Housekeeping may still see the runtime pod in a stale listing;
		// the worker finishing it is enough.
		if isRuntimePod {
			log.Debug("pod is terminated and waiting for cleanup; ignoring the runtime pod kill")
			return
		}
		if options.KillPodOptions != nil && options.KillPodOptions.CompletedCh != nil {
			close(options.KillPodOptions.CompletedCh)
		}
		options.KillPodOptions = nil

	case st.IsTerminationRequested():
		if options.KillPodOptions == nil {
			options.KillPodOptions = &KillPodOptions{}
		}
		if ch := options.KillPodOptions.CompletedCh; ch != nil {
			st.notifyPostTerminating = append(st.notifyPostTerminating, ch)
		}
		if fn := options.KillPodOptions.PodStatusFunc; fn != nil {
			st.statusPostTerminating = append(st.statusPostTerminating, fn)
		}
		gracePeriod, shortened := effectiveGracePeriod(st, pod, options.KillPodOptions)
		gracePeriodShortened = shortened
		st.gracePeriod = gracePeriod
		// Always hand the computed grace period down, never zero.
		options.KillPodOptions.PodTerminationGracePeriodSecondsOverride = &gracePeriod

	default:
		// Kill options mean nothing to a pod that is not terminating.
		if options.KillPodOptions != nil {
			if ch := options.KillPodOptions.CompletedCh; ch != nil {
				close(ch)
			}
			options.KillPodOptions = nil
		}
	}

	podUpdates, exists := p.podUpdates[uid]
	if !exists {
		// Buffered so that notifying never blocks.
		podUpdates = make(chan struct{}, 1)
		p.podUpdates[uid] = podUpdates
		// Static pods of one full name start in the order they arrive.
		if status.IsStaticPod(pod) {
			p.waitingToStartStaticPodsByFullname[st.fullname] = append(p.waitingToStartStaticPodsByFullname[st.fullname], uid)
		}
		go func() {
			p.podWorkerLoop(uid, podUpdates)
			p.log.Debug("pod worker stopped", "uid", uid)
		}()
	}

	// Keep the oldest StartTime: the metric measures the longest wait.
	if st.pendingUpdate != nil && !st.pendingUpdate.StartTime.IsZero() && st.pendingUpdate.StartTime.Before(options.StartTime) {
		options.StartTime = st.pendingUpdate.StartTime
	}

	st.pendingUpdate = &options
	log.Trace("notifying the pod worker of a pending update", "work_type", st.WorkType())
	p.wake(uid, st)

	if (becameTerminating || gracePeriodShortened) && st.cancelFn != nil {
		log.Debug("cancelling the current sync", "work_type", st.WorkType())
		st.cancelFn()
	}
}

// allowPodStart decides whether the pod may start now (canStart) and
// whether it ever can (canEverStart), requeueing a static pod that must
// wait for an older instance of its name. Call it with mu held.
func (p *PodWorkers) allowPodStart(pod *v1.Pod) (canStart, canEverStart bool) {
	if !status.IsStaticPod(pod) {
		return true, true
	}
	st, ok := p.podSyncStatuses[pod.UID]
	if !ok {
		p.log.Error("pod has no sync status but its worker runs", "pod", pod.Namespace+"/"+pod.Name, "uid", pod.UID)
		return false, false
	}
	if st.IsTerminationRequested() {
		return false, false
	}
	if !p.allowStaticPodStart(st.fullname, pod.UID) {
		p.workQueue.Enqueue(pod.UID, wait.Jitter(p.backOffPeriod, workerBackOffPeriodJitterFactor))
		return false, true
	}
	return true, true
}

// allowStaticPodStart lets a static pod start if no other pod of its full
// name runs and it is the first valid one waiting. Call it with mu held.
func (p *PodWorkers) allowStaticPodStart(fullname string, uid types.UID) bool {
	if startedUID, started := p.startedStaticPodsByFullname[fullname]; started {
		return startedUID == uid
	}
	waiting := p.waitingToStartStaticPodsByFullname[fullname]
	for i, waitingUID := range waiting {
		st, ok := p.podSyncStatuses[waitingUID]
		if !ok || st.IsTerminationRequested() || st.IsTerminated() {
			continue
		}
		if waitingUID != uid {
			p.waitingToStartStaticPodsByFullname[fullname] = waiting[i:]
			return false
		}
		waiting = waiting[i+1:]
		break
	}
	if len(waiting) != 0 {
		p.waitingToStartStaticPodsByFullname[fullname] = waiting
	} else {
		delete(p.waitingToStartStaticPodsByFullname, fullname)
	}
	p.startedStaticPodsByFullname[fullname] = uid
	return true
}

// cleanupUnstartedPod finishes a pod that was told to stop before it ever
// started. Call it with mu held.
func (p *PodWorkers) cleanupUnstartedPod(pod *v1.Pod, st *podSyncStatus) {
	p.cleanupPodUpdates(pod.UID)
	st.finished = true
	st.working = false
	st.terminatedAt = p.clock.Now()
	p.releaseStaticName(st.fullname, pod.UID)
}

// releaseStaticName frees a static pod's full name for the next instance
// and wakes the worker of the first one waiting for it. Upstream leaves that
// one to its backoff (backOffPeriod with jitter): an edited manifest, a new
// UID, ran 10-15 s after the edit while a new one runs in about a second.
// Call it with mu held.
func (p *PodWorkers) releaseStaticName(fullname string, uid types.UID) {
	if p.startedStaticPodsByFullname[fullname] != uid {
		return
	}
	delete(p.startedStaticPodsByFullname, fullname)
	for _, next := range p.waitingToStartStaticPodsByFullname[fullname] {
		st, ok := p.podSyncStatuses[next]
		if !ok || st.IsTerminationRequested() || st.IsTerminated() {
			continue
		}
		// A worker that was told to wait keeps its update pending
		// (startPodSync); one still working will ask again by itself.
		if st.pendingUpdate != nil && !st.working {
			p.wake(next, st)
		}
		return
	}
}
