package podworkers

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"
)

// podSyncStatus is one pod's progress through the states, upstream's
// struct of the same name. The PodWorkers lock guards it.
type podSyncStatus struct {
	// ctx is the context of the current sync; cancelFn cancels it when
	// the pod must stop (or stop faster).
	ctx      context.Context
	cancelFn context.CancelFunc

	// fullname is "<name>_<namespace>", which static pods must not share
	// while running.
	fullname string

	// working is true while an update is pending or being worked on.
	working bool
	// pendingUpdate is the latest update the worker has not taken yet.
	// A newer update replaces it: the worker sees only the most recent.
	pendingUpdate *UpdatePodOptions
	// activeUpdate is the pod's state the worker acts on, accumulated
	// (see mergeLastUpdate). It is set once the pod started.
	activeUpdate *UpdatePodOptions

	// syncedAt: the worker first saw the pod. startedAt: it allowed the
	// pod to start. terminatingAt: the pod was asked to stop (possibly
	// before the worker noticed). terminatedAt: SyncTerminatingPod
	// succeeded, no container runs.
	syncedAt      time.Time
	startedAt     time.Time
	terminatingAt time.Time
	terminatedAt  time.Time
	// gracePeriod is the grace period in force once terminating.
	gracePeriod int64
	// notifyPostTerminating are the kills' CompletedCh, closed once
	// terminated; statusPostTerminating their status functions, the last
	// of which applies.
	notifyPostTerminating []chan<- struct{}
	statusPostTerminating []PodStatusFunc

	// startedTerminating: the worker saw the request to stop, so no new
	// container can start any more.
	startedTerminating bool
	// deleted: the pod was deleted from its source (or is an orphan).
	deleted bool
	// evicted: the kill was an eviction.
	evicted bool
	// finished: SyncTerminatedPod succeeded; kept until housekeeping
	// forgets the pod.
	finished bool
	// restartRequested: a Create for the same UID came while the pod was
	// terminating; once it is finished, housekeeping forgets it so that
	// the UID can start again.
	restartRequested bool
	// observedRuntime: the pod was seen on the runtime, so it must be
	// driven through termination even if it never started here.
	observedRuntime bool
}

func (s *podSyncStatus) IsTerminationRequested() bool { return !s.terminatingAt.IsZero() }
func (s *podSyncStatus) IsTerminationStarted() bool   { return s.startedTerminating }
func (s *podSyncStatus) IsTerminated() bool           { return !s.terminatedAt.IsZero() }
func (s *podSyncStatus) IsFinished() bool             { return s.finished }
func (s *podSyncStatus) IsEvicted() bool              { return s.evicted }
func (s *podSyncStatus) IsDeleted() bool              { return s.deleted }
func (s *podSyncStatus) IsStarted() bool              { return !s.startedAt.IsZero() }

// WorkType is the pod's state.
func (s *podSyncStatus) WorkType() PodWorkerState {
	switch {
	case s.IsTerminated():
		return TerminatedPod
	case s.IsTerminationRequested():
		return TerminatingPod
	}
	return SyncPod
}

// mergeLastUpdate folds an update into activeUpdate, as upstream: the
// latest Pod wins, except that a RunningPod never replaces a real pod; the
// kill options accumulate (an eviction stays one, an override is kept).
func (s *podSyncStatus) mergeLastUpdate(other UpdatePodOptions) {
	opts := s.activeUpdate
	if opts == nil {
		opts = &UpdatePodOptions{}
		s.activeUpdate = opts
	}
	if opts.Pod == nil || other.RunningPod == nil {
		opts.Pod = other.Pod
	}
	opts.RunningPod = other.RunningPod
	if other.KillPodOptions != nil {
		opts.KillPodOptions = &KillPodOptions{Evict: other.KillPodOptions.Evict}
		if override := other.KillPodOptions.PodTerminationGracePeriodSecondsOverride; override != nil {
			value := *override
			opts.KillPodOptions.PodTerminationGracePeriodSecondsOverride = &value
		}
	}
}

// effectiveGracePeriod is upstream's calculateEffectiveGracePeriod: the
// grace period of a terminating pod, which only ever shrinks. The
// deletion grace period and a kill's override may shorten it; without
// either it is the pod's terminationGracePeriodSeconds; it is at least 1 s.
// shortened reports whether it is shorter than the one in force.
func effectiveGracePeriod(status *podSyncStatus, pod *v1.Pod, options *KillPodOptions) (gracePeriod int64, shortened bool) {
	gracePeriod = status.gracePeriod
	overridden := false
	if override := pod.DeletionGracePeriodSeconds; override != nil {
		if gracePeriod == 0 || *override < gracePeriod {
			gracePeriod = *override
			overridden = true
		}
	}
	if options != nil {
		if override := options.PodTerminationGracePeriodSecondsOverride; override != nil {
			if gracePeriod == 0 || *override < gracePeriod {
				gracePeriod = *override
				overridden = true
			}
		}
	}
	if !overridden && gracePeriod == 0 && pod.Spec.TerminationGracePeriodSeconds != nil {
		gracePeriod = *pod.Spec.TerminationGracePeriodSeconds
	}
	if gracePeriod < 1 {
		gracePeriod = 1
	}
	return gracePeriod, status.gracePeriod != 0 && status.gracePeriod != gracePeriod
}
