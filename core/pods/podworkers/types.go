package podworkers

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/runtime/container"
)

// UpdateType says why a pod is being updated, upstream's SyncPodType.
type UpdateType int

const (
	// Sync is a periodic or event-driven resync of a known pod.
	Sync UpdateType = iota
	// Update is a change of the pod in its source.
	Update
	// Create is a pod new to the node.
	Create
	// Kill asks for the pod to be stopped (removed from its source,
	// evicted, an orphan found on the runtime, ...).
	Kill
)

// String is upstream's name of the type, the operation_type label of
// kubelet_pod_worker_duration_seconds.
func (t UpdateType) String() string {
	switch t {
	case Sync:
		return "sync"
	case Update:
		return "update"
	case Create:
		return "create"
	case Kill:
		return "kill"
	}
	return fmt.Sprintf("UpdateType(%d)", int(t))
}

// PodStatusFunc changes the status of a pod being killed, for example to
// say it was evicted. Later kills' functions win.
type PodStatusFunc func(status *v1.PodStatus)

// KillPodOptions shape a kill.
type KillPodOptions struct {
	// CompletedCh, if set, is closed once the pod's containers are all
	// stopped (SyncTerminatingPod succeeded), or at once if the pod is
	// already stopped or unknown.
	CompletedCh chan<- struct{}
	// Evict marks the kill as an eviction: the pod's content (volumes,
	// stopped containers) may be reclaimed at once.
	Evict bool
	// PodStatusFunc, if set, overrides the pod's status once it is
	// stopping.
	PodStatusFunc PodStatusFunc
	// PodTerminationGracePeriodSecondsOverride shortens the grace period.
	// A grace period never grows once the pod is terminating.
	PodTerminationGracePeriodSecondsOverride *int64
}

// UpdatePodOptions is one update to a pod.
type UpdatePodOptions struct {
	// UpdateType says why.
	UpdateType UpdateType
	// StartTime, if set, is when the change behind the update was seen;
	// the time until the worker has acted on it is recorded in
	// kubelet_pod_worker_duration_seconds.
	StartTime time.Time
	// Pod is the pod. Required unless RunningPod is set.
	Pod *v1.Pod
	// RunningPod is a pod found on the runtime that no source wants any
	// more (an orphan). Only a Kill may carry it; it is ignored when Pod
	// is set.
	RunningPod *container.Pod
	// KillPodOptions shape a kill; they are ignored unless the pod is
	// terminating.
	KillPodOptions *KillPodOptions
}

// PodWorkerState is where a pod is in its life on the node.
type PodWorkerState int

const (
	// SyncPod: the pod is meant to be running; SyncPod is called.
	SyncPod PodWorkerState = iota
	// TerminatingPod: the pod is being stopped; no new container may start.
	TerminatingPod
	// TerminatedPod: no container of the pod runs any more; the pod's
	// resources are being released.
	TerminatedPod
)

func (s PodWorkerState) String() string {
	switch s {
	case SyncPod:
		return "sync"
	case TerminatingPod:
		return "terminating"
	case TerminatedPod:
		return "terminated"
	}
	return fmt.Sprintf("PodWorkerState(%d)", int(s))
}

// PodWorkerSync sums up one worker for housekeeping.
type PodWorkerSync struct {
	// State of the pod.
	State PodWorkerState
	// Orphan: the pod was not among the desired pods given to
	// SyncKnownPods.
	Orphan bool
	// HasConfig: the worker has the pod's spec (it is not only a runtime
	// pod).
	HasConfig bool
	// Static: the pod has config and came from a static source.
	Static bool
}

// Syncer does the work of each state. Its methods are called for many pods
// at once, never twice at once for one pod.
type Syncer interface {
	// SyncPod sets the pod up and (re)starts its containers. isTerminal
	// true means the pod is done (Succeeded or Failed) and must be
	// stopped. An error means the sync is retried after a backoff. It
	// should return context.Canceled soon after ctx is cancelled, which
	// happens when the pod is to be killed.
	SyncPod(ctx context.Context, updateType UpdateType, pod *v1.Pod, status *container.PodStatus) (isTerminal bool, err error)
	// SyncTerminatingPod stops the pod's containers within gracePeriod
	// seconds and records its final status, applying statusFn if set.
	// It is called until it succeeds, with a grace period that only
	// shrinks; ctx is cancelled when a shorter one arrives. gracePeriod is
	// nil when the pod stops on its own (it completed, or it is no longer
	// desired) rather than by a kill: the pod's own grace period applies
	// (deletionGracePeriodSeconds, else terminationGracePeriodSeconds), as
	// upstream.
	SyncTerminatingPod(ctx context.Context, pod *v1.Pod, status *container.PodStatus, gracePeriod *int64, statusFn func(*v1.PodStatus)) error
	// SyncTerminatingRuntimePod stops an orphan's containers. It must not
	// succeed until they are all stopped.
	SyncTerminatingRuntimePod(ctx context.Context, runningPod *container.Pod) error
	// SyncTerminatedPod releases what the stopped pod still holds. Once it
	// succeeds the pod is finished on the node.
	SyncTerminatedPod(ctx context.Context, pod *v1.Pod, status *container.PodStatus) error
}
