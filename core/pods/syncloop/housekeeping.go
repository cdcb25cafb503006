package syncloop

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/microlet/microlet/core/pods/podworkers"
	"github.com/microlet/microlet/core/pods/status"
	"github.com/microlet/microlet/core/runtime/container"
)

// housekeeping is upstream's HandlePodCleanups: it reconciles the workers
// with the desired pods, stops pods the runtime runs that no source wants,
// drops statuses of forgotten pods and retries parked admissions. It waits
// until every source has delivered its pods once, to the loop itself:
// before that, "not desired" may only mean "not read yet" (after a restart
// of the core).
func (l *Loop) housekeeping(ctx context.Context) {
	if !l.sourcesReady.Load() {
		if !l.opts.Config.SeenAllSources(l.sourcesSeen) {
			return
		}
		l.sourcesReady.Store(true)
	}
	start := time.Now()
	defer func() {
		if took := time.Since(start); took > housekeepingWarning {
			l.log.Warn("housekeeping took longer than expected", "took", took)
		}
	}()

	for _, pod := range l.pending.all() {
		l.admitAndStart(ctx, pod, nil)
	}
	l.retryDeferredResizes(ctx)
	desired := l.desired.all() // the loop's own: it cannot change meanwhile
	admitted := l.admittedPods("")
	l.counts.recordPods(desired, l.activeOf(admitted))
	// Every desired pod, finished ones included: a worker that finished a
	// pod its source still holds is kept, so that the pod stays known
	// terminated (not active, not admitted again).
	known := l.workers.SyncKnownPods(desired)

	// A desired pod the workers do not know was waiting for a predecessor
	// of the same name to finish, or the workers forgot it after it
	// finished: start it again unless it has finished for good.
	for _, pod := range admitted {
		if _, ok := known[pod.UID]; ok || l.finished(pod) {
			continue
		}
		l.workers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.Create, Pod: pod, StartTime: time.Now()})
		known[pod.UID] = podworkers.PodWorkerSync{State: podworkers.SyncPod, HasConfig: true, Static: status.IsStaticPod(pod)}
		l.counts.restartedPod(pod)
	}

	if pods, err := l.opts.Runtime.ListPods(ctx); err != nil {
		l.log.Warn("housekeeping cannot list the runtime's pods", "error", err)
	} else {
		l.stopOrphans(pods, known)
		l.removeDeadContainers(pods)
	}
	l.counts.recordWorkers(known)
	l.reportActivePods(ctx)

	keep := map[types.UID]bool{}
	for _, pod := range desired {
		keep[pod.UID] = true
	}
	for uid := range known {
		keep[uid] = true
	}
	l.opts.Statuses.RemoveOrphanedStatuses(keep)
}

// finished says whether a pod reached Succeeded or Failed.
func (l *Loop) finished(pod *v1.Pod) bool {
	st, ok := l.opts.Statuses.GetPodStatus(pod.UID)
	return ok && status.IsTerminalPhase(st.Phase)
}

// stopOrphans kills what runs in the runtime for pods no worker drives.
func (l *Loop) stopOrphans(pods []*container.Pod, known map[types.UID]podworkers.PodWorkerSync) {
	for _, rp := range pods {
		if state, ok := known[rp.UID]; ok && state.State != podworkers.TerminatedPod {
			continue // its worker drives it
		}
		if _, waiting := l.pending.get(rp.UID); waiting {
			continue // it keeps running while it waits for admission
		}
		if !runs(rp) {
			continue // dead leftovers: removeDeadContainers, container GC
		}
		l.workers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.Kill, RunningPod: rp, StartTime: time.Now()})
		if _, ok := known[rp.UID]; !ok {
			// The workers drive it from now on.
			known[rp.UID] = podworkers.PodWorkerSync{State: podworkers.TerminatingPod, Orphan: true}
			l.counts.orphaned.Inc()
		}
	}
}

// runs says whether anything of a runtime pod is alive.
func runs(p *container.Pod) bool {
	for _, sb := range p.Sandboxes {
		if sb.State == container.SandboxReady {
			return true
		}
	}
	for _, c := range p.Containers {
		if c.State == container.StateRunning || c.State == container.StateCreated {
			return true
		}
	}
	return false
}

// reportActivePods tells OnActivePods of the active pods when they changed
// since it was last told, or when it failed last time.
func (l *Loop) reportActivePods(ctx context.Context) {
	if l.opts.OnActivePods == nil {
		return
	}
	active := l.ActivePods()
	now := sets.New[types.UID]()
	for _, p := range active {
		now.Insert(p.UID)
	}
	if l.activeSet != nil && l.activeSet.Equal(now) {
		return
	}
	if err := l.opts.OnActivePods(ctx, active); err != nil {
		l.log.Warn("node-level resources did not follow the pods; retrying", "error", err)
		l.activeSet = nil
		return
	}
	l.activeSet = now
}
