package devices

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/microlet/microlet/core/pluginhost"
)

const (
	// CheckpointDir is the checkpoint's directory under the agent's root
	// dir, upstream's device-plugins directory name.
	CheckpointDir = "device-plugins"
	// CheckpointFile is the checkpoint's name (upstream:
	// kubelet_internal_checkpoint).
	CheckpointFile = "microlet_internal_checkpoint"
	// EndpointStopGracePeriod is how long a resource whose plugin is gone
	// (its slot removed, or not offered again since the core restarted) keeps
	// its capacity before it is dropped (upstream endpointStopGracePeriod).
	EndpointStopGracePeriod = 5 * time.Minute
	// DefaultCallTimeout bounds GetPreferredAllocation and Allocate.
	// Upstream sets none; admission holds the sync loop, so a plugin that
	// hangs must not hold it for long.
	DefaultCallTimeout = 10 * time.Second
)

// slotScanInterval is how often the manager looks for devices slots added
// or removed by a reload, and drops resources whose grace period ended.
const slotScanInterval = time.Second

// Slot is where one devices plugin serves: *pluginhost.Plugin, a devices
// slot of the plugin host.
type Slot interface {
	pluginhost.Slot
	// Name is the plugin's name within the devices kind.
	Name() string
}

// HostSlots lists the plugin host's devices slots, looked up on every call
// so that plugins a reload configures or removes are followed.
func HostSlots(host *pluginhost.Host) func() []Slot {
	return func() []Slot {
		plugins := host.Plugins(pluginhost.Devices)
		out := make([]Slot, len(plugins))
		for i, p := range plugins {
			out[i] = p
		}
		return out
	}
}

// Options configure a Manager.
type Options struct {
	// Plugins lists the devices slots: HostSlots(host) in the agent. Nil:
	// no devices plugin, ever.
	Plugins func() []Slot
	// RootDir is the agent's root dir; the checkpoint is
	// <RootDir>/device-plugins/microlet_internal_checkpoint.
	RootDir string
	// CallTimeout bounds GetPreferredAllocation and Allocate; 0 is
	// DefaultCallTimeout. PreStartContainer has upstream's 30 s.
	CallTimeout time.Duration
	Logger      hclog.Logger
	// Affinity are the NUMA nodes the topology manager chose for a
	// container of a pod being admitted (the cgroup manager's
	// ContainerAffinity); the container's devices are picked on them
	// first. Nil, or nil nodes: no preference.
	Affinity func(uid types.UID, container string) []int64
	// Registerer takes the manager's metrics; nil: none.
	Registerer prometheus.Registerer
}

// Manager allocates devices of the devices plugins to containers. It
// implements syncloop.Admitter, syncloop.Releaser and
// podruntime.ContainerOptionsProvider, and is safe for concurrent use.
type Manager struct {
	opts       Options
	log        hclog.Logger
	checkpoint string
	now        func() time.Time
	grace      time.Duration

	// admitMu makes each admission one step: the devices it picks are
	// recorded before another admission looks for free ones.
	admitMu sync.Mutex
	// writeMu orders checkpoint writes; it is taken before mu.
	writeMu sync.Mutex
	// lastWritten is the checkpoint's content on disk.
	lastWritten []byte

	mu          sync.Mutex
	resources   map[string]*deviceResource
	plugins     map[string]*pluginState
	allocations podAllocations
	// restored are the pods whose allocations came from the checkpoint
	// and that admission has not seen since: ReleaseStale frees those no
	// source wants.
	restored sets.Set[types.UID]
	// conflicts already logged, as "<plugin> <resource>".
	conflicts sets.Set[string]
	metrics   *metrics
}

// New restores the checkpoint (a corrupt one is set aside and reported);
// Run starts following the plugins.
func New(opts Options) (*Manager, error) {
	if opts.RootDir == "" {
		return nil, errors.New("devicemanager: RootDir is required (the checkpoint lives under it)")
	}
	if opts.CallTimeout < 0 {
		return nil, fmt.Errorf("devicemanager: CallTimeout must not be negative, got %v", opts.CallTimeout)
	}
	if opts.CallTimeout == 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.Plugins == nil {
		opts.Plugins = func() []Slot { return nil }
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	m := &Manager{
		opts:        opts,
		log:         opts.Logger,
		checkpoint:  filepath.Join(opts.RootDir, CheckpointDir, CheckpointFile),
		now:         time.Now,
		grace:       EndpointStopGracePeriod,
		resources:   map[string]*deviceResource{},
		plugins:     map[string]*pluginState{},
		allocations: podAllocations{},
		restored:    sets.New[types.UID](),
		conflicts:   sets.New[string](),
	}
	var err error
	if m.metrics, err = newMetrics(opts.Registerer); err != nil {
		return nil, err
	}
	if err := m.restore(); err != nil {
		return nil, err
	}
	return m, nil
}

// Name names the manager as an admitter and a releaser.
func (m *Manager) Name() string { return string(pluginhost.Devices) }

// Run follows every devices slot, one ListAndWatch stream each, until ctx
// ends: it starts watching slots a reload adds, stops watching removed
// ones (their resources lose their plugin), and drops resources whose
// grace period has ended.
func (m *Manager) Run(ctx context.Context) {
	ticker := time.NewTicker(slotScanInterval)
	defer ticker.Stop()
	defer m.stopWatching()
	for {
		m.syncPlugins(ctx)
		m.expire()
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
	}
}

// syncPlugins matches the watched slots with the configured ones.
func (m *Manager) syncPlugins(ctx context.Context) {
	current := map[string]Slot{}
	for _, s := range m.opts.Plugins() {
		current[s.Name()] = s
	}
	var stopped []*pluginState
	m.mu.Lock()
	for name, st := range m.plugins {
		if s, ok := current[name]; ok && s == st.slot {
			continue
		}
		stopped = append(stopped, st)
		delete(m.plugins, name)
		if _, ok := current[name]; !ok {
			m.pluginRemovedLocked(name)
		}
	}
	for name, s := range current {
		if _, ok := m.plugins[name]; ok {
			continue
		}
		watchCtx, stop := context.WithCancel(ctx)
		st := &pluginState{slot: s, stop: stop, done: make(chan struct{})}
		m.plugins[name] = st
		go m.watch(watchCtx, name, st)
	}
	m.mu.Unlock()
	for _, st := range stopped {
		st.stop()
		<-st.done
	}
	if len(stopped) > 0 {
		// A failure is logged; the next change writes the checkpoint again.
		_ = m.writeCheckpoint()
	}
}

// stopWatching ends every watch when Run returns.
func (m *Manager) stopWatching() {
	m.mu.Lock()
	watched := make([]*pluginState, 0, len(m.plugins))
	for _, st := range m.plugins {
		watched = append(watched, st)
	}
	m.plugins = map[string]*pluginState{}
	m.mu.Unlock()
	for _, st := range watched {
		st.stop()
		<-st.done
	}
}

// configured says whether a devices slot of that name is configured now.
func (m *Manager) configured(name string) bool {
	return m.slot(name) != nil
}

// slot is the configured slot of that name, or nil.
func (m *Manager) slot(name string) Slot {
	for _, s := range m.opts.Plugins() {
		if s.Name() == name {
			return s
		}
	}
	return nil
}

// pluginName is how messages name a devices plugin.
func pluginName(name string) string { return string(pluginhost.Devices) + "/" + name }
