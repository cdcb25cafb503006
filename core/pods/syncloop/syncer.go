package syncloop

import (
	"context"
	"errors"
	"fmt"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/cluster/events"
	"github.com/microlet/microlet/core/pods/podruntime"
	"github.com/microlet/microlet/core/pods/podworkers"
	"github.com/microlet/microlet/core/pods/status"
	"github.com/microlet/microlet/core/runtime/container"
)

// The loop is the pod workers' Syncer: what it means to sync and terminate
// a pod, as upstream's kubelet.SyncPod and friends.
var _ podworkers.Syncer = (*Loop)(nil)

// SyncPod brings a running pod's status and containers in line with its
// spec. It reports isTerminal once the pod's phase is Succeeded or Failed.
func (l *Loop) SyncPod(ctx context.Context, _ podworkers.UpdateType, pod *v1.Pod, rs *container.PodStatus) (bool, error) {
	pod = l.allocated(pod)
	apiStatus := l.opts.Generator.PodStatus(pod, rs, l.previousStatus(pod), false)
	l.opts.Statuses.SetPodStatus(pod, apiStatus)
	if status.IsTerminalPhase(apiStatus.Phase) {
		return true, nil
	}
	if !pod.Spec.HostNetwork {
		if err := l.opts.Health.NetworkErr(); err != nil {
			l.opts.Recorder.Eventf(pod, v1.EventTypeWarning, events.NetworkNotReady, "%s: %v", podworkers.NetworkNotReadyErrorMsg, err)
			// The worker retries sooner for this message, as upstream.
			return false, fmt.Errorf("%s: %v", podworkers.NetworkNotReadyErrorMsg, err)
		}
	}
	var probes podruntime.ProbeResults
	if l.opts.Prober != nil {
		l.opts.Prober.UpdatePod(pod, rs)
		probes = l.opts.Prober
	}
	result := l.opts.Runtime.SyncPod(ctx, pod, rs, probes)
	l.recordReasons(pod, result)
	if startedContainer(result) {
		l.statusAfterStart(ctx, pod)
	}
	if result.OnlyBackOff() {
		// A pod waiting out a backoff is not a failed sync (upstream), but
		// it is synced again once the backoff may have ended, not at the
		// resync interval: the worker retries it as after an error.
		return false, fmt.Errorf("%w: %w", podworkers.ErrBackOff, result.Err())
	}
	return false, result.Err()
}

// startedContainer reports whether a sync started a container.
func startedContainer(result *podruntime.SyncResult) bool {
	for _, step := range result.Steps {
		if step.Action == podruntime.ActionStartContainer && step.Err == nil {
			return true
		}
	}
	return false
}

// statusAfterStart reads the pod back from the runtime once a sync started
// a container and records the status it now has (Running, say) at once.
// Upstream leaves that to the sync that PLEG's next relist causes, up to a
// relist period plus the relist's own time later (0.7 s median, 1.5 s at
// most, in a 100-pod start on 2 loaded cores): every pod's startup as the
// control plane sees it would wait that long. The read goes into the
// runtime cache too, as a relist's would; the relist that follows sends
// the start's events without reading the pod again when this status shows
// what it lists, and the sync its event causes changes nothing. A
// failed read only leaves that to the relist, and a read older than what
// the cache already holds (an event came first) to the sync that event
// causes.
func (l *Loop) statusAfterStart(ctx context.Context, pod *v1.Pod) {
	if ctx.Err() != nil {
		return
	}
	fresh, err := l.opts.Runtime.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		l.log.Debug("cannot read a pod back after starting its containers; its next relist will", "pod", podName(pod), "error", err)
		return
	}
	if !l.opts.Cache.Set(pod.UID, fresh, nil, fresh.Timestamp) {
		return
	}
	st := l.opts.Generator.PodStatus(pod, fresh, l.previousStatus(pod), false)
	l.opts.Statuses.SetPodStatus(pod, st)
}

// recordReasons keeps why containers could not start, for their waiting
// state in the pod's status.
func (l *Loop) recordReasons(pod *v1.Pod, result *podruntime.SyncResult) {
	for _, step := range result.Steps {
		if step.Action != podruntime.ActionStartContainer {
			continue
		}
		if step.Err != nil {
			l.opts.Reasons.Add(pod.UID, step.Target, step.Reason, step.Message)
		} else {
			l.opts.Reasons.Remove(pod.UID, step.Target)
		}
	}
}

// SyncTerminatingPod stops every container of a pod with the grace period
// (nil: the pod's own) and records the status it ends with.
func (l *Loop) SyncTerminatingPod(ctx context.Context, pod *v1.Pod, rs *container.PodStatus, gracePeriod *int64, statusFn func(*v1.PodStatus)) error {
	apiStatus := l.opts.Generator.PodStatus(pod, rs, l.previousStatus(pod), false)
	if statusFn != nil {
		statusFn(&apiStatus)
	}
	l.opts.Statuses.SetPodStatus(pod, apiStatus)

	if l.opts.Prober != nil {
		l.opts.Prober.RemovePod(pod.UID)
	}
	if err := l.opts.Runtime.KillPod(ctx, pod, rs.RunningPod(), gracePeriod); err != nil {
		l.opts.Recorder.Eventf(pod, v1.EventTypeWarning, events.FailedToKillPod, "error killing pod: %v", err)
		return fmt.Errorf("kill pod %s: %w", podName(pod), err)
	}
	stopped, err := l.opts.Runtime.GetPodStatus(ctx, pod.UID, pod.Name, pod.Namespace)
	if err != nil {
		return fmt.Errorf("read stopped pod %s: %w", podName(pod), err)
	}
	if running := stopped.RunningContainers(); len(running) > 0 {
		return fmt.Errorf("pod %s still has %d running containers after kill", podName(pod), len(running))
	}
	final := l.opts.Generator.PodStatus(pod, stopped, l.previousStatus(pod), true)
	if statusFn != nil {
		statusFn(&final)
	}
	l.opts.Statuses.SetPodStatus(pod, final)
	return nil
}

// SyncTerminatingRuntimePod stops a pod the runtime runs but no source
// wants (left from before a restart of the core, say).
func (l *Loop) SyncTerminatingRuntimePod(ctx context.Context, orphan *container.Pod) error {
	l.log.Info("stopping a pod no source wants", "pod", orphan.Namespace+"/"+orphan.Name, "uid", orphan.UID)
	return l.opts.Runtime.KillPod(ctx, nil, orphan, nil)
}

// SyncTerminatedPod releases what a stopped pod held and records its final
// status.
func (l *Loop) SyncTerminatedPod(ctx context.Context, pod *v1.Pod, rs *container.PodStatus) error {
	l.opts.Statuses.SetPodStatus(pod, l.opts.Generator.PodStatus(pod, rs, l.previousStatus(pod), true))
	var errs []error
	for _, r := range l.opts.Releasers {
		if err := r.Release(ctx, pod); err != nil {
			errs = append(errs, fmt.Errorf("release %s of pod %s: %w", r.Name(), podName(pod), err))
		}
	}
	if err := l.opts.Runtime.CleanupPod(ctx, pod.UID); err != nil {
		errs = append(errs, fmt.Errorf("clean up pod %s: %w", podName(pod), err))
	}
	if err := errors.Join(errs...); err != nil {
		return err
	}
	for _, c := range append(append([]v1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		l.opts.Reasons.Remove(pod.UID, c.Name)
	}
	l.opts.Statuses.TerminatePod(pod)
	return nil
}

// previousStatus is the status the manager holds, or else the pod's own.
func (l *Loop) previousStatus(pod *v1.Pod) v1.PodStatus {
	return currentStatus(l.opts.Statuses, pod)
}
