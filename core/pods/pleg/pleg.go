// Package pleg is the pod lifecycle event generator, as upstream's
// pkg/kubelet/pleg: it notices what changes on the container runtime,
// refreshes the pod status cache for the pods that changed, and tells the
// sync loop which pods to look at.
//
// It relists (generic PLEG): every RelistPeriod it lists the runtime's pods,
// compares each container and sandbox with the previous listing, reads the
// status of what it listed of every pod that changed into the cache (unless
// the cache already holds one that shows what the listing shows), emits
// ContainerStarted, ContainerDied and ContainerRemoved events, and marks the
// cache fresh as of the relist's start. When the runtime streams container events (CRI
// GetContainerEvents) and Config.Events is set, it takes the pod statuses
// from the events instead and relists only every 300 s as a safety net,
// falling back to relisting every RelistPeriod after 5 stream failures
// (evented PLEG). containerd 1.6 has no event stream, so there it relists.
package pleg

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/microlet/microlet/core/pods/podcache"
	"github.com/microlet/microlet/core/runtime/container"
)

// Upstream's constants (pkg/kubelet/kubelet.go).
const (
	// DefaultRelistPeriod is genericPlegRelistPeriod.
	DefaultRelistPeriod = time.Second
	// DefaultRelistThreshold is genericPlegRelistThreshold: PLEG is
	// unhealthy when its last relist started longer ago than this.
	DefaultRelistThreshold = 3 * time.Minute
	// EventedRelistPeriod and EventedRelistThreshold replace the relist
	// period and threshold while container events are in use.
	EventedRelistPeriod    = 300 * time.Second
	EventedRelistThreshold = 10 * time.Minute
	// MaxStreamRetries is eventedPlegMaxStreamRetries: after this many
	// event stream failures PLEG goes back to relisting every RelistPeriod.
	MaxStreamRetries = 5
	// ChannelCapacity is plegChannelCapacity, the event channel's size.
	ChannelCapacity = 1000
)

// DefaultInspectTimeout bounds one pod's GetPodStatus, and the runtime's
// ListPods, in a relist. Upstream has no such deadline and relists serially,
// so one hung pod stalls every other pod's events until the CRI request
// timeout (2 min) ends it.
const DefaultInspectTimeout = 10 * time.Second

// globalCacheUpdatePeriod is how often the cache's global timestamp is
// advanced while container events are in use, as upstream, so that a pod
// worker waiting on the cache is never stuck on a lost event.
const globalCacheUpdatePeriod = 5 * time.Second

// maxConcurrentInspections bounds the GetPodStatus calls in flight in one
// relist.
const maxConcurrentInspections = 8

// Runtime is what PLEG needs from the runtime manager.
type Runtime interface {
	// ListPods lists every pod with containers or sandboxes on the runtime,
	// dead ones included.
	ListPods(ctx context.Context) ([]*container.Pod, error)
	// GetPodStatus reads everything the runtime knows of one pod.
	GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error)
	// ListedPodStatus reads the status of the sandboxes and containers a
	// listing that began at listedAt holds of one pod, dated listedAt.
	ListedPodStatus(ctx context.Context, listed *container.Pod, listedAt time.Time) (*container.PodStatus, error)
}

// Config configures a PLEG. Zero durations take the defaults above.
type Config struct {
	// Runtime is listed and inspected. Required.
	Runtime Runtime
	// Cache receives the pod statuses. Required.
	Cache *podcache.Cache
	// Events, when set and the runtime streams container events, replaces
	// most relisting with the event stream. EventStatus is then required.
	Events EventSource
	// EventStatus turns an event into the pod's status.
	EventStatus StatusGenerator
	// RelistPeriod is the time between the end of one relist and the start
	// of the next, as upstream's wait.Until.
	RelistPeriod time.Duration
	// RelistThreshold is how old the last relist may be before Healthy
	// fails.
	RelistThreshold time.Duration
	// InspectTimeout bounds ListPods and each pod's GetPodStatus in a relist.
	InspectTimeout time.Duration
	// Log receives PLEG's messages; nil discards them.
	Log hclog.Logger
	// Registerer receives PLEG's metrics; nil leaves them unregistered.
	Registerer prometheus.Registerer
	// Clock is for tests; nil is the real clock.
	Clock clock.WithTicker
}

// durations are the relist period and health threshold in force; they
// change when container events come into or go out of use.
type durations struct {
	period    time.Duration
	threshold time.Duration
}

// PLEG generates pod lifecycle events. Make one with New and call Run.
type PLEG struct {
	runtime        Runtime
	cache          *podcache.Cache
	events         EventSource
	eventStatus    StatusGenerator
	generic        durations
	inspectTimeout time.Duration
	log            hclog.Logger
	clock          clock.WithTicker
	metrics        *metrics

	ch chan *PodLifecycleEvent

	// relistMu serialises relists: the periodic one and those forced by
	// event stream failures.
	relistMu sync.Mutex
	// records and reinspect belong to the relist holding relistMu.
	records   podRecords
	reinspect map[types.UID]*container.Pod

	// lastRelist is when the last relist that listed the runtime started.
	lastRelist atomic.Pointer[time.Time]
	current    atomic.Pointer[durations]
	evented    atomic.Bool
	// modeChanged wakes the relist loop when the period shortens.
	modeChanged chan struct{}
	// relistSoon wakes the relist loop for a pod worker that waits on a
	// newer status (RelistSoon).
	relistSoon chan struct{}
}

// New checks cfg and makes a PLEG.
func New(cfg Config) (*PLEG, error) {
	if cfg.Runtime == nil {
		return nil, errors.New("pleg: Config.Runtime is nil; a runtime to list pods from is required")
	}
	if cfg.Cache == nil {
		return nil, errors.New("pleg: Config.Cache is nil; a pod status cache is required")
	}
	if cfg.Events != nil && cfg.EventStatus == nil {
		return nil, errors.New("pleg: Config.Events is set but Config.EventStatus is nil; events need a status generator")
	}
	for _, f := range []struct {
		name  string
		value time.Duration
	}{{"RelistPeriod", cfg.RelistPeriod}, {"RelistThreshold", cfg.RelistThreshold}, {"InspectTimeout", cfg.InspectTimeout}} {
		if f.value < 0 {
			return nil, fmt.Errorf("pleg: Config.%s is %v; expected a positive duration (or 0 for the default)", f.name, f.value)
		}
	}
	d := durations{period: orDefault(cfg.RelistPeriod, DefaultRelistPeriod), threshold: orDefault(cfg.RelistThreshold, DefaultRelistThreshold)}
	inspectTimeout := orDefault(cfg.InspectTimeout, DefaultInspectTimeout)
	if d.threshold <= d.period {
		return nil, fmt.Errorf("pleg: relist threshold %v is not longer than the relist period %v; expected a threshold well above the period", d.threshold, d.period)
	}
	if limit := relistBudget(d.threshold); inspectTimeout > limit {
		return nil, fmt.Errorf("pleg: inspect timeout %v is longer than a third of the relist threshold (%v); expected at most %v", inspectTimeout, d.threshold, limit)
	}
	log := cfg.Log
	if log == nil {
		log = hclog.NewNullLogger()
	}
	clk := cfg.Clock
	if clk == nil {
		clk = clock.RealClock{}
	}
	m, err := newMetrics(cfg.Registerer)
	if err != nil {
		return nil, err
	}
	p := &PLEG{
		runtime:        cfg.Runtime,
		cache:          cfg.Cache,
		events:         cfg.Events,
		eventStatus:    cfg.EventStatus,
		generic:        d,
		inspectTimeout: inspectTimeout,
		log:            log,
		clock:          clk,
		metrics:        m,
		ch:             make(chan *PodLifecycleEvent, ChannelCapacity),
		records:        podRecords{},
		modeChanged:    make(chan struct{}, 1),
		relistSoon:     make(chan struct{}, 1),
	}
	p.current.Store(&d)
	return p, nil
}

func orDefault(v, def time.Duration) time.Duration {
	if v == 0 {
		return def
	}
	return v
}

// relistBudget is the longest a relist may take: a third of the health
// threshold, so that a relist that runs into it still starts the next one
// well before PLEG would be reported unhealthy.
func relistBudget(threshold time.Duration) time.Duration { return threshold / 3 }

// Watch returns the channel the events arrive on. There is one channel,
// for one reader: the sync loop.
func (p *PLEG) Watch() <-chan *PodLifecycleEvent { return p.ch }

// Evented reports whether container events are in use now.
func (p *PLEG) Evented() bool { return p.evented.Load() }

// Run relists until ctx ends, taking container events instead when the
// runtime streams them. Call it once.
func (p *PLEG) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	if p.events != nil {
		if p.events.SupportsEvents() {
			p.useEvents()
			wg.Add(2)
			go func() { defer wg.Done(); p.watchEvents(ctx) }()
			go func() { defer wg.Done(); p.advanceCacheTime(ctx) }()
		} else {
			p.log.Info("the container runtime does not stream container events; relisting instead", "relist_period", p.generic.period)
		}
	}
	for {
		p.Relist(ctx)
		timer := p.clock.NewTimer(p.current.Load().period)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C():
		case <-p.modeChanged:
			timer.Stop()
		case <-p.relistSoon:
			timer.Stop()
		}
	}
}

// RelistSoon asks for a relist now rather than at the next period. A pod
// worker that terminates a pod waits for a status newer than its last
// action twice (before stopping the containers, before cleaning up); a
// relist at once saves up to a period each time, which an edited static
// pod, whose new instance waits for the old one, pays in full.
func (p *PLEG) RelistSoon() {
	select {
	case p.relistSoon <- struct{}{}:
	default:
	}
}
