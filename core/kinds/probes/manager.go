package probes

import (
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/cluster/events"
	"github.com/microlet/microlet/core/pluginhost"
	"github.com/microlet/microlet/core/runtime/container"
)

// Options configure a Manager.
type Options struct {
	// Plugin is the probes plugin's slot; nil when no probes plugin is
	// configured, and containers are then treated as having no probes.
	Plugin pluginhost.Slot
	// NodeIPs are the node's addresses: the default host of probes of pods
	// on the host's network.
	NodeIPs []string
	// CallTimeout bounds each call to the plugin. Default 2s, the plugin
	// host's.
	CallTimeout time.Duration
	// Registerer receives the prober metrics (served on /metrics/probes);
	// nil registers none.
	Registerer prometheus.Registerer
	// Logger receives the prober's lines; nil discards them.
	Logger hclog.Logger
	// Events records the prober's events (Unhealthy); nil records none.
	Events events.Recorder
}

const (
	defaultCallTimeout = 2 * time.Second
	// updatesBuffer is upstream's: three results managers buffering 20
	// updates each.
	updatesBuffer = 3 * 20
)

// Manager keeps the probes plugin probing the running containers and
// caches what it finds. Its methods are safe for concurrent use.
type Manager struct {
	slot        pluginhost.Slot
	nodeIPs     []string
	callTimeout time.Duration
	logger      hclog.Logger
	events      events.Recorder
	metrics     *metrics
	updates     chan Update
	// kick wakes the session when pending has changes to push.
	kick chan struct{}

	mu         sync.RWMutex
	pods       map[types.UID]*podEntry
	containers map[string]*containerEntry
	// pending are container IDs whose probes changed since the plugin last
	// heard of them: SetContainerProbes if still wanted, else
	// RemoveContainerProbes.
	pending map[string]struct{}
}

// podEntry is what the manager keeps of a pod between UpdatePod calls.
type podEntry struct {
	name, namespace string
	containerIDs    []string
}

// New returns a Manager. Run keeps it in step with the plugin.
func New(opts Options) (*Manager, error) {
	if opts.CallTimeout < 0 {
		return nil, errors.New("prober: CallTimeout must not be negative")
	}
	if opts.CallTimeout == 0 {
		opts.CallTimeout = defaultCallTimeout
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	// A nil *pluginhost.Plugin (Host.Plugin of an unconfigured kind) is no
	// plugin.
	if p, ok := opts.Plugin.(*pluginhost.Plugin); ok && p == nil {
		opts.Plugin = nil
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return nil, err
	}
	return &Manager{
		slot:        opts.Plugin,
		nodeIPs:     opts.NodeIPs,
		callTimeout: opts.CallTimeout,
		logger:      opts.Logger,
		events:      events.OrNop(opts.Events),
		metrics:     m,
		updates:     make(chan Update, updatesBuffer),
		kick:        make(chan struct{}, 1),
		pods:        map[types.UID]*podEntry{},
		containers:  map[string]*containerEntry{},
		pending:     map[string]struct{}{},
	}, nil
}

// UpdatePod takes a pod and its runtime status: its running containers
// (and sidecars) get their probes, with the initial verdicts for an
// instance not seen before, and instances no longer running are dropped
// with their verdicts. Call it with the status a sync acts on, before the
// runtime manager's SyncPod, so that Started and ShouldRestart know every
// instance that sync sees; calling it again changes nothing. It does not
// wait for the plugin.
func (m *Manager) UpdatePod(pod *v1.Pod, runtime *container.PodStatus) {
	desired := desiredContainers(pod, runtime, m.nodeIPs, m.slot != nil)
	m.mu.Lock()
	changed := false
	if old := m.pods[pod.UID]; old != nil {
		for _, id := range old.containerIDs {
			if desired[id] == nil {
				changed = m.dropLocked(id) || changed
			}
		}
	}
	entry := &podEntry{name: pod.Name, namespace: pod.Namespace}
	for id, d := range desired {
		entry.containerIDs = append(entry.containerIDs, id)
		if e := m.containers[id]; e != nil {
			if e.update(d) {
				m.pending[id] = struct{}{}
				changed = true
			}
			continue
		}
		m.containers[id] = d
		if d.probes != nil {
			m.pending[id] = struct{}{}
			changed = true
		}
	}
	m.pods[pod.UID] = entry
	m.mu.Unlock()
	if changed {
		m.wake()
	}
}

// RemovePod forgets a pod that is gone: its probes stop, its verdicts and
// metric series are dropped.
func (m *Manager) RemovePod(uid types.UID) {
	m.mu.Lock()
	entry := m.pods[uid]
	if entry == nil {
		m.mu.Unlock()
		return
	}
	changed := false
	for _, id := range entry.containerIDs {
		changed = m.dropLocked(id) || changed
	}
	delete(m.pods, uid)
	m.mu.Unlock()
	m.metrics.forgetPod(uid, entry.name, entry.namespace)
	if changed {
		m.wake()
	}
}

// dropLocked forgets a container instance and says whether the plugin
// must be told.
func (m *Manager) dropLocked(id string) bool {
	e := m.containers[id]
	if e == nil {
		return false
	}
	delete(m.containers, id)
	if e.probes == nil {
		return false
	}
	m.pending[id] = struct{}{}
	return true
}

func (m *Manager) wake() {
	select {
	case m.kick <- struct{}{}:
	default:
	}
}
