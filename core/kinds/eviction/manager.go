// Package eviction is the core's side of node-pressure eviction. Its manager
// runs a cycle every monitoring period, and at once when the kernel reports
// memory pressure (core/node/memnotify): it takes fresh stats, asks the eviction
// plugin to decide (Synchronize), runs the node-level reclaim the plugin
// asks for through core/kinds/imagegc and asks again, then evicts, keeping the final
// say: a bounded number of pods per cycle, never a critical pod, a minimum
// grace period, and the pod's cleanup awaited before the next cycle. It keeps
// the node's pressure conditions, admits pods under pressure, and says what
// the hard thresholds hold back for node allocatable.
//
// While no eviction plugin is configured or serving, a built-in evictor
// decides instead: the kubelet strategy's engine with the kubelet's default
// hard thresholds. While no stats plugin serves, the manager measures memory
// and disk itself (Measurer). docs/eviction.md ("Core side") describes it.
package eviction

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/microlet/microlet/core/cluster/events"
	"github.com/microlet/microlet/core/kinds/stats"
	"github.com/microlet/microlet/core/node/memnotify"
	"github.com/microlet/microlet/core/pods/podworkers"
	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk/evictionengine"
)

// Upstream's figures (pkg/kubelet/eviction/eviction_manager.go, kubelet.go).
const (
	// DefaultMonitoringInterval is evictionMonitoringPeriod.
	DefaultMonitoringInterval = 10 * time.Second
	// DefaultMaxPodsPerCycle: upstream evicts at most one pod per cycle.
	DefaultMaxPodsPerCycle = 1
	// podCleanupTimeout and podCleanupPollFreq bound the wait for evicted
	// pods' cleanup before the next cycle.
	podCleanupTimeout  = 30 * time.Second
	podCleanupPollFreq = time.Second
	// While an armed usage level is already passed the kernel will not
	// signal it again, so the manager looks for itself rather than wait for
	// the next tick (not upstream, which waits; docs/eviction.md): first
	// exceededRecheckFirst after the cycle that found it, the wait then
	// doubling up to exceededRecheck while it stays passed. The short first
	// wait is for the race a level armed from a fresh sample can still
	// lose: usage that grows on between the measurement and the arming (a
	// pod filling memory fast) passes the new level before the kernel
	// watches it, and the next measurement finds the signal met. The
	// doubling bounds the cost where usage sits past a level for long.
	exceededRecheckFirst = 100 * time.Millisecond
	exceededRecheck      = time.Second
)

// Pods is the core's pods as the manager uses them (the sync loop, the pod
// views, the cgroup manager).
type Pods interface {
	// ActivePods are the admitted pods not yet asked to stop.
	ActivePods() []*v1.Pod
	// PodView is the pod as plugins see it.
	PodView(pod *v1.Pod) *typesv1.Pod
	// PodCgroup is the pod's cgroup, from the hierarchy's root, once it
	// has one: all the pressure poll needs of a pod, every second.
	PodCgroup(uid types.UID) (string, bool)
	// KillPod stops a pod through the sync loop and waits until its
	// containers are stopped (syncloop.Loop.KillPod).
	KillPod(pod *v1.Pod, evict bool, gracePeriod *int64, statusFn podworkers.PodStatusFunc) error
	// PodCleanedUp reports that a stopped pod's resources are released.
	PodCleanedUp(uid types.UID) bool
}

// Stats gives summaries from the stats plugin (core/kinds/stats.Provider).
type Stats interface {
	Sample(ctx context.Context, fresh bool) (*stats.Sample, error)
}

// Reclaimer runs node-level reclaim (core/kinds/imagegc.Manager).
type Reclaimer interface {
	CollectContainers(ctx context.Context, removeAll bool) error
	CollectImages(ctx context.Context, bytesToFree uint64) (uint64, error)
}

// Notifier arms kernel memory notifications (core/node/memnotify.Notifier).
type Notifier interface {
	Events() <-chan memnotify.Event
	Arm(thresholds []memnotify.Threshold) error
	// Exceeded lists the armed levels that usage has already passed.
	Exceeded() []string
	Close() error
}

// Options configure a Manager.
type Options struct {
	Plugin    Plugin
	Stats     Stats
	Measurer  *Measurer
	Pods      Pods
	Reclaimer Reclaimer
	// Node is the node view (capacity, allocatable, conditions).
	Node func() *typesv1.Node
	// Notifier starts cycles on kernel memory notifications; nil: only the
	// periodic cycle. Run closes it when it returns.
	Notifier Notifier
	// MonitoringInterval is the period of cycles; 0 is
	// DefaultMonitoringInterval.
	MonitoringInterval time.Duration
	// MaxPodsPerCycle bounds evictions per cycle; 0 is DefaultMaxPodsPerCycle.
	MaxPodsPerCycle int
	// Pressure reads the memory pressure stall information a request's
	// stats lack, and polls it for the levels the strategy asks to be woken
	// at; nil reads none.
	Pressure *Pressure
	// PressurePollInterval is how often the levels are polled; 0 is
	// DefaultPressurePollInterval, below 0 never.
	PressurePollInterval time.Duration
	Logger               hclog.Logger
	Registerer           prometheus.Registerer
	// Clock is for tests; nil is the real clock.
	Clock clock.WithTicker
	// Events records EvictionThresholdMet on node NodeName and Evicted on
	// pods; nil records none.
	Events events.Recorder
	// NodeName is the node's name.
	NodeName string
}

// Manager is the eviction manager. Its methods are safe for concurrent use;
// cycles run one at a time, from Run.
type Manager struct {
	opts    Options
	log     hclog.Logger
	builtin *evictionengine.Engine
	metrics *metrics

	mu sync.Mutex
	// pluginState and builtinState are what each strategy returned last.
	pluginState, builtinState []byte
	// pluginConditions are the plugin's last conditions, kept while it
	// does not serve; conditions are the node's current ones.
	pluginConditions, conditions []*typesv1.NodeCondition
	// pluginReserved is the plugin's last node reservation.
	pluginReserved *typesv1.ResourceList
	// pressureLevels are the pressure stall levels the last answer asked
	// the core to poll.
	pressureLevels []*evictionv1.PressureNotification
	// fallback is why the last cycle used the built-in evictor; "" if it
	// did not. It is logged when it changes.
	fallback string
	// localStats is why the last cycle measured locally; "" if it did not.
	localStats string
	// exceeded names the armed levels usage had passed after the last
	// cycle; "" if none.
	exceeded string
	// recheckWait is the last wait recheck timed; 0 while no level is
	// exceeded. Run's goroutine alone uses it.
	recheckWait time.Duration
}

// New checks the options and builds the built-in evictor.
func New(opts Options) (*Manager, error) {
	if opts.Plugin == nil || opts.Stats == nil || opts.Pods == nil || opts.Reclaimer == nil || opts.Node == nil {
		return nil, errors.New("eviction: Plugin, Stats, Pods, Reclaimer and Node are required")
	}
	if opts.MonitoringInterval <= 0 {
		opts.MonitoringInterval = DefaultMonitoringInterval
	}
	if opts.PressurePollInterval == 0 {
		opts.PressurePollInterval = DefaultPressurePollInterval
	}
	if opts.MaxPodsPerCycle <= 0 {
		opts.MaxPodsPerCycle = DefaultMaxPodsPerCycle
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	opts.Events = events.OrNop(opts.Events)
	builtin, err := newBuiltin()
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	return &Manager{opts: opts, log: opts.Logger, builtin: builtin, metrics: m}, nil
}

// Run runs a cycle every monitoring interval and on every memory
// notification, until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	var notifications <-chan memnotify.Event
	if m.opts.Notifier != nil {
		notifications = m.opts.Notifier.Events()
		defer func() {
			if err := m.opts.Notifier.Close(); err != nil {
				m.log.Warn("closing the memory notifier", "error", err)
			}
		}()
	}
	ticker := m.opts.Clock.NewTicker(m.opts.MonitoringInterval)
	defer ticker.Stop()
	var recheck, pressurePoll <-chan time.Time
	run := func(trigger evictionv1.Trigger) {
		m.cycle(ctx, trigger)
		recheck = m.recheck()
		pressurePoll = m.pressurePoll()
	}
	run(evictionv1.Trigger_TRIGGER_PERIODIC)
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
			run(evictionv1.Trigger_TRIGGER_PERIODIC)
		case e := <-notifications:
			m.log.Debug("memory notification", "cgroup", e.Cgroup, "source", e.Source)
			run(evictionv1.Trigger_TRIGGER_MEMORY_NOTIFICATION)
		case <-recheck:
			// Stands in for the notification the kernel will not send.
			run(evictionv1.Trigger_TRIGGER_MEMORY_NOTIFICATION)
		case <-pressurePoll:
			if level := m.pressureReached(); level != "" {
				m.log.Debug("memory pressure stall level reached", "level", level)
				run(evictionv1.Trigger_TRIGGER_MEMORY_PRESSURE)
			} else {
				pressurePoll = m.pressurePoll()
			}
		}
	}
}

// recheck is when to run a cycle again because an armed usage level is
// already passed; nil while none is.
func (m *Manager) recheck() <-chan time.Time {
	if m.opts.Notifier == nil {
		return nil
	}
	over := m.opts.Notifier.Exceeded()
	m.mu.Lock()
	m.logChange(&m.exceeded, strings.Join(over, ", "),
		"memory usage is past a notification level the kernel will not signal again: eviction cycles run at least every second until it drops below",
		"memory usage is below every notification level again: eviction cycles run on notifications and the period")
	m.mu.Unlock()
	if len(over) == 0 {
		m.recheckWait = 0
		return nil
	}
	m.recheckWait = min(max(2*m.recheckWait, exceededRecheckFirst), exceededRecheck)
	return m.opts.Clock.After(m.recheckWait)
}

// pressurePoll is when to read the pressure stall averages next; nil while
// the strategy asks for no level (nothing is read then).
func (m *Manager) pressurePoll() <-chan time.Time {
	m.mu.Lock()
	asked := len(m.pressureLevels) > 0
	m.mu.Unlock()
	if !asked || m.opts.Pressure == nil || m.opts.PressurePollInterval < 0 {
		return nil
	}
	return m.opts.Clock.After(m.opts.PressurePollInterval)
}

// pressureReached names a level the strategy asked for that the node's or
// an active pod's memory pressure has reached; "" if none.
func (m *Manager) pressureReached() string {
	m.mu.Lock()
	levels := m.pressureLevels
	m.mu.Unlock()
	return m.opts.Pressure.reached(levels, func() []podCgroup {
		var out []podCgroup
		for _, pod := range m.opts.Pods.ActivePods() {
			if cgroup, ok := m.opts.Pods.PodCgroup(pod.UID); ok {
				out = append(out, podCgroup{uid: string(pod.UID), name: pod.Namespace + "/" + pod.Name, cgroup: cgroup})
			}
		}
		return out
	})
}

// Conditions are the node's pressure conditions (MemoryPressure,
// DiskPressure, PIDPressure) as the last cycle left them; none before the
// first cycle.
func (m *Manager) Conditions() []*typesv1.NodeCondition {
	m.mu.Lock()
	defer m.mu.Unlock()
	return cloneConditions(m.conditions)
}

// logChange records a change of *current to next and logs it once: started
// (at warn level, with the reason) when next is set, ended when it clears.
func (m *Manager) logChange(current *string, next, started, ended string) {
	if *current == next {
		return
	}
	*current = next
	if next == "" {
		m.log.Info(ended)
		return
	}
	m.log.Warn(started, "reason", next)
}

// reason is an error's text for logChange.
func reason(err error) string {
	if err == nil {
		return ""
	}
	return fmt.Sprint(err)
}
