package podworkers

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/pods/status"
)

// SyncKnownPods reconciles the workers with the pods the node should run,
// for housekeeping. It forgets finished pods that are no longer desired
// (or were created again under the same UID), and starts terminating
// desired-no-more pods that still run: from now on the workers drive them
// to the end themselves. It returns every worker it kept, by UID; the
// caller re-sends a Create for desired pods missing from it. The first call
// also marks the workers as synced: from then on a pod they do not know is
// known not to run.
func (p *PodWorkers) SyncKnownPods(desiredPods []*v1.Pod) map[types.UID]PodWorkerSync {
	workers := make(map[types.UID]PodWorkerSync)
	known := make(map[types.UID]struct{}, len(desiredPods))
	for _, pod := range desiredPods {
		known[pod.UID] = struct{}{}
	}

	p.mu.Lock()
	defer p.mu.Unlock()

	p.podsSynced = true
	for uid, st := range p.podSyncStatuses {
		_, desired := known[uid]
		orphan := !desired
		if (st.restartRequested || orphan) && p.removeTerminatedWorker(uid, st, orphan) {
			continue
		}
		sync := PodWorkerSync{State: st.WorkType(), Orphan: orphan}
		var pod *v1.Pod
		switch {
		case st.activeUpdate != nil:
			pod = st.activeUpdate.Pod
		case st.pendingUpdate != nil:
			pod = st.pendingUpdate.Pod
		}
		if pod != nil {
			sync.HasConfig = true
			sync.Static = status.IsStaticPod(pod)
		}
		workers[uid] = sync
	}
	return workers
}

// removeTerminatedWorker forgets a finished pod, so that its UID may start
// again, and reports whether it did. An orphan that is not finished is set
// on its way instead: never started, it is simply dropped by its worker;
// running, it is asked to terminate; terminating, its worker is woken.
// Call it with mu held.
func (p *PodWorkers) removeTerminatedWorker(uid types.UID, st *podSyncStatus, orphaned bool) bool {
	if !st.finished {
		if !orphaned {
			p.log.Debug("pod worker was asked to go but the pod is not finished yet", "uid", uid)
			return false
		}
		st.deleted = true
		switch {
		case !st.IsStarted() && !st.observedRuntime:
			p.log.Debug("pod is orphaned and never started; dropping it", "uid", uid)
		case !st.IsTerminationRequested():
			st.terminatingAt = p.clock.Now()
			if st.activeUpdate != nil && st.activeUpdate.Pod != nil {
				st.gracePeriod, _ = effectiveGracePeriod(st, st.activeUpdate.Pod, nil)
			} else {
				st.gracePeriod = 1
			}
			p.requeueLastPodUpdate(uid, st)
			p.log.Debug("pod is orphaned and still running; terminating it", "uid", uid)
			return false
		default:
			p.requeueLastPodUpdate(uid, st)
			p.log.Debug("pod is orphaned and terminating; waking its worker", "uid", uid)
			return false
		}
	}
	if st.restartRequested {
		p.log.Debug("pod terminated and its UID was created again; forgetting it so that it can start", "uid", uid)
	} else {
		p.log.Debug("pod terminated and is no longer wanted; forgetting it", "uid", uid)
	}
	delete(p.podSyncStatuses, uid)
	p.cleanupPodUpdates(uid)
	p.releaseStaticName(st.fullname, uid)
	return true
}
