// Package syncloop is the core's main loop. It turns pod updates from the
// sources, runtime events from PLEG, probe results and periodic ticks into
// work for the pod workers, and implements what the workers call (sync a
// pod, terminate it) on top of the runtime manager and pod status.
package syncloop

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/microlet/microlet/core/cluster/events"
	"github.com/microlet/microlet/core/pods/pleg"
	"github.com/microlet/microlet/core/pods/podcache"
	"github.com/microlet/microlet/core/pods/podconfig"
	"github.com/microlet/microlet/core/pods/podruntime"
	"github.com/microlet/microlet/core/pods/podworkers"
	"github.com/microlet/microlet/core/pods/resize"
	"github.com/microlet/microlet/core/pods/status"
	"github.com/microlet/microlet/core/runtime/container"
)

// Upstream periods (pkg/kubelet/kubelet.go).
const (
	syncTickPeriod     = time.Second
	housekeepingPeriod = 2 * time.Second
	// housekeepingWarning is how long a housekeeping pass may take before
	// it is logged as slow.
	housekeepingWarning = time.Second
	// runtime backoff while the runtime is not ready.
	runtimeBackoffBase = 100 * time.Millisecond
	runtimeBackoffMax  = 5 * time.Second
)

// Runtime is the runtime manager as the loop uses it.
type Runtime interface {
	pleg.Runtime
	SyncPod(ctx context.Context, pod *v1.Pod, status *container.PodStatus, probes podruntime.ProbeResults) *podruntime.SyncResult
	KillPod(ctx context.Context, pod *v1.Pod, runtimePod *container.Pod, gracePeriodOverride *int64) error
	CleanupPod(ctx context.Context, uid types.UID) error
	// DeleteContainer removes a dead container instance of the named pod.
	DeleteContainer(ctx context.Context, podName, podNamespace, containerName, containerID string) error
}

// Events is PLEG as the loop uses it.
type Events interface {
	Watch() <-chan *pleg.PodLifecycleEvent
	Healthy() (bool, error)
	// RelistSoon asks for a relist at once (a pod worker terminating a pod).
	RelistSoon()
}

// Health says whether the runtime and its network are ready.
type Health interface {
	// RuntimeErr is nil when the runtime is ready.
	RuntimeErr() error
	// NetworkErr is nil when the pod network is ready.
	NetworkErr() error
}

// Options are what the loop is built from.
type Options struct {
	Config    *podconfig.PodConfig
	Runtime   Runtime
	Events    Events
	Cache     *podcache.Cache
	Statuses  *status.Manager
	Reasons   *status.ReasonCache
	Generator *status.Generator
	Health    Health
	// Admitters run after the core's own max-pods check, in order.
	Admitters []Admitter
	// Prober runs the pods' probes; nil: no probes.
	Prober Prober
	// ProbeUpdates names pods whose probe results changed; nil: none.
	ProbeUpdates <-chan types.UID
	// Releasers free what a pod held (cgroups, devices) once it terminated.
	Releasers []Releaser
	// OnActivePods is told the active pods whenever the set changes (node
	// level resources follow it); nil: nobody.
	OnActivePods func(ctx context.Context, active []*v1.Pod) error
	// MaxPods is the node's capacity in pods.
	MaxPods       int
	SyncFrequency time.Duration
	Logger        hclog.Logger
	Registerer    prometheus.Registerer
	// Resizes keeps pods' allocated resources for in-place resize; nil:
	// pods run as their spec says and resizes are not decided.
	Resizes *resize.Manager
	// Allocatable is the node's allocatable resources, the bound of a
	// resize; nil: not checked.
	Allocatable func() v1.ResourceList
	// Recorder records the kubelet's pod events of admission (a refusal's
	// reason, OutOfcpu say), syncing and terminating (NetworkNotReady,
	// FailedKillPod, ExceededGracePeriod); nil records none.
	Recorder events.Recorder
}

// Prober is the core's prober as the loop uses it.
type Prober interface {
	podruntime.ProbeResults
	// UpdatePod sets a pod's probes from its spec and the runtime's fresh
	// view of it (which containers run now).
	UpdatePod(pod *v1.Pod, runtime *container.PodStatus)
	// RemovePod stops probing a pod.
	RemovePod(uid types.UID)
}

// Releaser frees what a terminated pod held.
type Releaser interface {
	Name() string
	Release(ctx context.Context, pod *v1.Pod) error
}

// Loop is the sync loop.
type Loop struct {
	opts    Options
	log     hclog.Logger
	counts  *podCounts
	desired *desiredPods
	workers *podworkers.PodWorkers
	queue   *podworkers.WorkQueue
	// pending pods wait for an admitter that could not decide.
	pending *desiredPods
	// rejected pods were refused at admission; they never run.
	rejected *rejectedPods
	// lastIteration is when the loop last went round (unix nanos), for healthz.
	lastIteration atomic.Int64
	// activeSet is the active pods OnActivePods was last told of.
	activeSet sets.Set[types.UID]
	// sourcesSeen are the sources the loop has had an update from (upstream's
	// sourcesReady): podconfig may have read a source whose pods still wait
	// in its channel.
	sourcesSeen sets.Set[string]
	// deadContainers removes the exited containers of pods that are gone.
	deadContainers *deadContainers
	// sourcesReady turns true, for good, once every source has reached the
	// loop; others read it (garbage collection asks it before it counts a
	// pod as deleted).
	sourcesReady atomic.Bool
}

// New builds the loop and its pod workers.
func New(opts Options) (*Loop, error) {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	opts.Recorder = events.OrNop(opts.Recorder)
	l := &Loop{
		opts:        opts,
		log:         opts.Logger,
		desired:     newDesiredPods(),
		pending:     newDesiredPods(),
		rejected:    newRejectedPods(),
		sourcesSeen: sets.New[string](),
		queue:       podworkers.NewWorkQueue(nil),
	}
	l.deadContainers = newDeadContainers(opts.Runtime, opts.Logger)
	workers, err := podworkers.New(podworkers.Config{
		Syncer:         l,
		Cache:          opts.Cache,
		RelistSoon:     opts.Events.RelistSoon,
		WorkQueue:      l.queue,
		ResyncInterval: opts.SyncFrequency,
		Log:            opts.Logger.Named("podworkers"),
		Registerer:     opts.Registerer,
		Recorder:       opts.Recorder,
	})
	if err != nil {
		return nil, err
	}
	l.workers = workers
	if l.counts, err = newPodCounts(opts.Registerer); err != nil {
		return nil, err
	}
	l.opts.Admitters = append([]Admitter{logsDirAdmitter{}, maxPodsAdmitter{max: opts.MaxPods}}, opts.Admitters...)
	return l, nil
}

// Run drives the loop until ctx ends.
func (l *Loop) Run(ctx context.Context) {
	syncTicker := time.NewTicker(syncTickPeriod)
	defer syncTicker.Stop()
	housekeeping := time.NewTicker(housekeepingPeriod)
	defer housekeeping.Stop()
	backoff := runtimeBackoffBase
	go l.deadContainers.run(ctx)
	for {
		l.lastIteration.Store(time.Now().UnixNano())
		if err := l.opts.Health.RuntimeErr(); err != nil {
			// As upstream: nothing can be synced while the runtime is down.
			l.log.Warn("container runtime is not ready; waiting", "error", err, "retry", backoff)
			select {
			case <-ctx.Done():
				return
			case <-time.After(backoff):
			}
			backoff = min(2*backoff, runtimeBackoffMax)
			continue
		}
		backoff = runtimeBackoffBase
		select {
		case <-ctx.Done():
			return
		case update, ok := <-l.opts.Config.Updates():
			if !ok {
				return
			}
			l.handleUpdate(ctx, update)
		case event := <-l.opts.Events.Watch():
			l.handleEvent(event)
		case uid := <-l.opts.ProbeUpdates:
			l.syncKnown(uid)
		case <-syncTicker.C:
			for _, uid := range append(l.queue.GetWork(), l.pastDeadline()...) {
				l.syncKnown(uid)
			}
		case <-housekeeping.C:
			l.housekeeping(ctx)
		}
	}
}

// Healthy is the "syncloop" healthz check: the loop went round recently
// (upstream: within max(2 x syncFrequency, 5m)).
func (l *Loop) Healthy() error {
	threshold := max(2*l.opts.SyncFrequency, 5*time.Minute)
	last := time.Unix(0, l.lastIteration.Load())
	if since := time.Since(last); since > threshold {
		return fmt.Errorf("sync loop was last active %v ago; threshold is %v", since.Round(time.Second), threshold)
	}
	return nil
}

// handleUpdate applies one change from the sources.
func (l *Loop) handleUpdate(ctx context.Context, update podconfig.PodUpdate) {
	l.sourcesSeen.Insert(update.Source)
	switch update.Op {
	case podconfig.OpAdd:
		sortByCreation(update.Pods)
		speculated := l.speculate(ctx, update.Pods)
		for _, pod := range update.Pods {
			l.desired.set(pod)
			l.admitAndStart(ctx, pod, speculated[pod.UID])
		}
	case podconfig.OpUpdate, podconfig.OpDelete, podconfig.OpReconcile:
		for _, pod := range update.Pods {
			if _, known := l.desired.get(pod.UID); !known {
				continue
			}
			l.desired.set(pod)
			if l.rejected.has(pod.UID) {
				continue
			}
			if _, waiting := l.pending.get(pod.UID); waiting {
				l.pending.set(pod)
				continue
			}
			l.resize(ctx, pod)
			l.workers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.Update, Pod: pod, StartTime: time.Now()})
		}
	case podconfig.OpRemove:
		for _, pod := range update.Pods {
			l.desired.remove(pod.UID)
			l.pending.remove(pod.UID)
			if l.rejected.has(pod.UID) {
				l.rejected.delete(pod.UID)
				continue
			}
			l.workers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.Kill, Pod: pod, StartTime: time.Now()})
		}
		l.retryDeferredResizes(ctx)
	}
}

// admitAndStart admits a new pod and hands it to the workers, or records
// why it was refused, or parks it while an admitter cannot decide; s, when
// not nil, is what the pure admitters were found to say (speculate).
func (l *Loop) admitAndStart(ctx context.Context, pod *v1.Pod, s *speculation) {
	if l.workers.IsPodKnownTerminated(pod.UID) {
		return
	}
	if status.IsTerminalPhase(pod.Status.Phase) {
		// As upstream: a pod its source already knows finished (an API pod
		// after a restart of the core) is not admitted again, which could
		// rewrite why it ended; its worker finds it terminated.
		l.workers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.Create, Pod: pod, StartTime: time.Now()})
		return
	}
	verdict, by := l.admitWith(ctx, pod, l.admittedPods(pod.UID), s)
	switch {
	case verdict.Admit:
		l.pending.remove(pod.UID)
		if l.opts.Resizes != nil {
			l.opts.Resizes.Admitted(pod)
		}
		l.workers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.Create, Pod: pod, StartTime: time.Now()})
	case verdict.Retry:
		if _, already := l.pending.get(pod.UID); !already {
			l.log.Warn("pod waits for admission", "pod", podName(pod), "admitter", by, "reason", verdict.Message)
		}
		l.pending.set(pod)
	default:
		l.pending.remove(pod.UID)
		l.rejected.insert(pod.UID)
		l.log.Warn("pod rejected at admission", "pod", podName(pod), "admitter", by, "reason", verdict.Reason, "message", verdict.Message)
		l.opts.Recorder.Eventf(pod, v1.EventTypeWarning, verdict.Reason, "%s", verdict.Message) // upstream's rejectPod
		l.opts.Statuses.SetPodStatus(pod, status.RejectedStatus(pod, verdict.Reason, verdict.Message))
	}
}

// admittedPods are the desired pods admitted and not yet terminated, except
// the one being admitted.
func (l *Loop) admittedPods(except types.UID) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range l.desired.all() {
		if p.UID == except || l.rejected.has(p.UID) || l.workers.IsPodKnownTerminated(p.UID) {
			continue
		}
		if _, waiting := l.pending.get(p.UID); waiting {
			continue
		}
		out = append(out, l.allocated(p))
	}
	return out
}

// handleEvent syncs the pod a runtime event is about.
func (l *Loop) handleEvent(event *pleg.PodLifecycleEvent) {
	if event.Type == pleg.ContainerRemoved {
		return
	}
	l.syncKnown(event.ID)
}

// syncKnown asks the workers to sync a desired pod.
func (l *Loop) syncKnown(uid types.UID) {
	pod, ok := l.desired.get(uid)
	if !ok || l.rejected.has(uid) {
		return
	}
	if _, waiting := l.pending.get(uid); waiting {
		return
	}
	l.workers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.Sync, Pod: pod, StartTime: time.Now()})
}

// KillPod stops a pod for a reason of the core's (eviction, shutdown), with
// the given grace period and a change to its final status.
func (l *Loop) KillPod(pod *v1.Pod, evict bool, gracePeriod *int64, statusFn podworkers.PodStatusFunc) error {
	return l.workers.KillPod(pod, evict, gracePeriod, statusFn)
}

// ActivePods are the admitted pods whose workers have not finished them.
func (l *Loop) ActivePods() []*v1.Pod { return l.activeOf(l.admittedPods("")) }

// activeOf are the pods of admitted whose termination was not requested.
func (l *Loop) activeOf(admitted []*v1.Pod) []*v1.Pod {
	var out []*v1.Pod
	for _, p := range admitted {
		if !l.workers.IsPodTerminationRequested(p.UID) {
			out = append(out, p)
		}
	}
	return out
}

// DesiredPods are every pod the sources want, admitted or not.
func (l *Loop) DesiredPods() []*v1.Pod { return l.desired.all() }

func podName(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }

// PodsWithStatus are the desired pods, each with its current status, for
// /pods.
func (l *Loop) PodsWithStatus() []*v1.Pod {
	pods := l.desired.all()
	out := make([]*v1.Pod, 0, len(pods))
	for _, p := range pods {
		pod := *p
		if st, ok := l.opts.Statuses.GetPodStatus(p.UID); ok {
			pod.Status = st
		}
		out = append(out, &pod)
	}
	return out
}

// SourcesReady says whether every source's pods have reached the loop.
// Before that, a pod the loop does not know may only not be read yet (after
// a restart of the core); once true it stays true.
func (l *Loop) SourcesReady() bool { return l.sourcesReady.Load() }

// CouldHaveRunningContainers says whether a pod may still have containers
// on the node (the API status syncer holds a terminal phase back until it
// cannot), as upstream's podDeletionSafety.
func (l *Loop) CouldHaveRunningContainers(uid types.UID) bool {
	return l.workers.CouldHaveRunningContainers(uid)
}
