// Package podworkers drives each pod on the node through its life, as
// upstream's pod workers (pkg/kubelet/pod_workers.go): one goroutine per
// pod UID moves the pod from syncing (SyncPod, until it is done or asked to
// stop) to terminating (SyncTerminatingPod, until every container is
// stopped) to terminated (SyncTerminatedPod, until its resources are
// released), after which the UID never starts again until housekeeping
// forgets it.
//
// Updates coalesce: a worker acts on the latest update only, but a kill is
// never lost, and a kill or a shorter grace period cancels the sync in
// progress. Before each sync the worker waits for a status from the pod
// cache newer than its own last action. A static pod whose manifest changed
// (a new UID under the same name) starts only once the previous instance
// has fully terminated. Workers requeue themselves on the work queue: at
// the sync frequency after a sync, after a backoff after an error.
//
// The state machine is a port of upstream's, simplified only where
// microlet has no such thing: there are no mirror pods (no API server), so
// the Syncer gets no mirror pod and there is no
// IsPodForMirrorPodTerminatingByFullName; there is no in-place resize
// (allocation manager) and no event recorder (the worker logs instead).
package podworkers

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/microlet/microlet/core/cluster/events"
	"github.com/microlet/microlet/core/pods/podcache"
)

// Upstream's periods (pkg/kubelet/kubelet.go, pod_workers.go).
const (
	// DefaultResyncInterval is the sync frequency's default: a worker
	// syncs its pod again this long (plus up to 50% jitter) after a sync.
	DefaultResyncInterval = time.Minute
	// DefaultBackOffPeriod is backOffPeriod: the wait (plus up to 50%)
	// after a failed sync.
	DefaultBackOffPeriod = 10 * time.Second
	// backOffOnTransientErrorPeriod replaces the backoff when the sync
	// failed because the network is not ready yet.
	backOffOnTransientErrorPeriod = time.Second
	// Jitter factors, as upstream's wait.Jitter: the delay is
	// d + rand[0, factor)*d.
	workerResyncIntervalJitterFactor = 0.5
	workerBackOffPeriodJitterFactor  = 0.5
)

// NetworkNotReadyErrorMsg starts the error a sync returns while the pod
// network is not ready, upstream's; such a sync is retried after 1 s
// instead of 10 s. Wrap the cause as upstream does:
// fmt.Errorf("%s: %v", NetworkNotReadyErrorMsg, err).
const NetworkNotReadyErrorMsg = "network is not ready"

// ErrBackOff marks a sync that failed only because it waits out a backoff
// (CrashLoopBackOff, ImagePullBackOff): nothing is wrong, so the worker
// logs it at debug level, but it retries after the error backoff, not the
// resync interval, so that a container restarts soon after its backoff
// ends (upstream 1.34 retries such a pod after its error backoff as well).
// Wrap it: fmt.Errorf("%w: %w", ErrBackOff, err).
var ErrBackOff = errors.New("waiting out a backoff")

// Config configures the pod workers.
type Config struct {
	// Syncer does the work. Required.
	Syncer Syncer
	// Cache is the pod status cache PLEG fills. Required.
	Cache *podcache.Cache
	// WorkQueue receives each pod's next sync time; the sync loop takes
	// due pods from it. Required.
	WorkQueue *WorkQueue
	// ResyncInterval is the sync frequency; 0 means DefaultResyncInterval.
	ResyncInterval time.Duration
	// BackOffPeriod is the wait after a failed sync; 0 means
	// DefaultBackOffPeriod.
	BackOffPeriod time.Duration
	// Log receives the workers' messages; nil discards them.
	Log hclog.Logger
	// Registerer receives the workers' metrics; nil leaves them
	// unregistered.
	Registerer prometheus.Registerer
	// Clock is for tests; nil is the real clock.
	Clock clock.Clock
	// RelistSoon, if set, asks PLEG for a relist at once: a worker calls it
	// before it waits on the cache to terminate a pod.
	RelistSoon func()
	// Recorder records upstream's ExceededGracePeriod for a kill that
	// timed out; nil records none.
	Recorder events.Recorder
}

// PodWorkers tracks every pod the node runs or ran recently and drives it
// through its states. It is the source of truth for whether a pod may
// have running containers. Make it with New.
type PodWorkers struct {
	// mu guards everything below.
	mu sync.Mutex
	// podsSynced is set by the first SyncKnownPods: from then on a pod
	// the workers do not know is known not to run.
	podsSynced bool
	// podUpdates wakes each pod's goroutine; a send means "take the
	// pending update". Closing it ends the goroutine.
	podUpdates map[types.UID]chan struct{}
	// podSyncStatuses is each known pod's progress.
	podSyncStatuses map[types.UID]*podSyncStatus
	// startedStaticPodsByFullname is the running static pod of each full
	// name; waitingToStartStaticPodsByFullname the UIDs waiting for it to
	// finish, in arrival order.
	startedStaticPodsByFullname        map[string]types.UID
	waitingToStartStaticPodsByFullname map[string][]types.UID

	syncer         Syncer
	cache          *podcache.Cache
	workQueue      *WorkQueue
	resyncInterval time.Duration
	backOffPeriod  time.Duration
	log            hclog.Logger
	metrics        *metrics
	clock          clock.Clock
	relistSoon     func()
	recorder       events.Recorder
}

// New checks cfg and makes the pod workers.
func New(cfg Config) (*PodWorkers, error) {
	switch {
	case cfg.Syncer == nil:
		return nil, errors.New("podworkers: Config.Syncer is nil; a Syncer is required")
	case cfg.Cache == nil:
		return nil, errors.New("podworkers: Config.Cache is nil; the pod status cache is required")
	case cfg.WorkQueue == nil:
		return nil, errors.New("podworkers: Config.WorkQueue is nil; a work queue is required")
	case cfg.ResyncInterval < 0:
		return nil, fmt.Errorf("podworkers: Config.ResyncInterval is %v; expected a positive duration (or 0 for %v)", cfg.ResyncInterval, DefaultResyncInterval)
	case cfg.BackOffPeriod < 0:
		return nil, fmt.Errorf("podworkers: Config.BackOffPeriod is %v; expected a positive duration (or 0 for %v)", cfg.BackOffPeriod, DefaultBackOffPeriod)
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	p := &PodWorkers{
		podUpdates:                         map[types.UID]chan struct{}{},
		podSyncStatuses:                    map[types.UID]*podSyncStatus{},
		startedStaticPodsByFullname:        map[string]types.UID{},
		waitingToStartStaticPodsByFullname: map[string][]types.UID{},
		syncer:                             cfg.Syncer,
		cache:                              cfg.Cache,
		workQueue:                          cfg.WorkQueue,
		resyncInterval:                     cfg.ResyncInterval,
		backOffPeriod:                      cfg.BackOffPeriod,
		log:                                cfg.Log,
		metrics:                            m,
		clock:                              cfg.Clock,
		relistSoon:                         cfg.RelistSoon,
		recorder:                           events.OrNop(cfg.Recorder),
	}
	if p.resyncInterval == 0 {
		p.resyncInterval = DefaultResyncInterval
	}
	if p.backOffPeriod == 0 {
		p.backOffPeriod = DefaultBackOffPeriod
	}
	if p.log == nil {
		p.log = hclog.NewNullLogger()
	}
	if p.clock == nil {
		p.clock = clock.RealClock{}
	}
	return p, nil
}

// IsPodKnownTerminated reports whether the pod's containers are known to
// be all stopped (SyncTerminatingPod succeeded). Unknown pods are not. For
// the config loops (admission), not for subsystems, which use ShouldPod*.
func (p *PodWorkers) IsPodKnownTerminated(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if status, ok := p.podSyncStatuses[uid]; ok {
		return status.IsTerminated()
	}
	return false
}

// CouldHaveRunningContainers is true for a known pod until it is
// terminated, and for an unknown pod until the first SyncKnownPods.
func (p *PodWorkers) CouldHaveRunningContainers(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if status, ok := p.podSyncStatuses[uid]; ok {
		return !status.IsTerminated()
	}
	return !p.podsSynced
}

// ShouldPodBeFinished is true once SyncTerminatedPod succeeded, and for an
// unknown pod once SyncKnownPods ran.
func (p *PodWorkers) ShouldPodBeFinished(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if status, ok := p.podSyncStatuses[uid]; ok {
		return status.IsFinished()
	}
	return p.podsSynced
}

// IsPodTerminationRequested is true once the pod was asked to stop, until
// it is forgotten; the pod may still be starting. Unknown pods are not
// terminating: cleanup loops use ShouldPodContainersBeTerminating.
func (p *PodWorkers) IsPodTerminationRequested(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if status, ok := p.podSyncStatuses[uid]; ok {
		return status.IsTerminationRequested()
	}
	return false
}

// ShouldPodContainersBeTerminating is true once the worker has seen the
// request to stop (no container will start any more), and for an unknown
// pod once SyncKnownPods ran.
func (p *PodWorkers) ShouldPodContainersBeTerminating(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if status, ok := p.podSyncStatuses[uid]; ok {
		return status.IsTerminationStarted()
	}
	return p.podsSynced
}

// ShouldPodRuntimeBeRemoved is true once the pod's containers are all
// stopped, and for an unknown pod once SyncKnownPods ran: then what the
// running containers used (other than content on disk) may be torn down.
func (p *PodWorkers) ShouldPodRuntimeBeRemoved(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if status, ok := p.podSyncStatuses[uid]; ok {
		return status.IsTerminated()
	}
	return p.podsSynced
}

// ShouldPodContentBeRemoved is true for an evicted pod, for a deleted pod
// once its containers are stopped, and for an unknown pod once
// SyncKnownPods ran: then everything of the pod may go, volumes included.
func (p *PodWorkers) ShouldPodContentBeRemoved(uid types.UID) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if status, ok := p.podSyncStatuses[uid]; ok {
		return status.IsEvicted() || (status.IsDeleted() && status.IsTerminated())
	}
	return p.podsSynced
}
