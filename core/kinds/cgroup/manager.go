// Package cgroup is the core's side of the cgroup plugin: it asks
// the plugin for plans (a pod's cgroup and container resources, node
// allocatable and the QoS cgroups, admission) and applies them with
// containerd's cgroups library on cgroup v1 and v2. It keeps the last good
// plan of every pod and of the node, so that a plugin that is down or being
// replaced changes nothing that runs.
//
// docs/cgroups.md describes the behaviour, the fallbacks and every
// departure from the kubelet.
package cgroup

import (
	"context"
	"errors"
	"fmt"
	"path"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/cluster/events"
	"github.com/microlet/microlet/core/node/machine"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// DefaultReapplyInterval is how often the node's cgroups are planned and
// applied again, and stuck pod cgroups removed (upstream
// periodicQOSCgroupUpdateInterval).
const DefaultReapplyInterval = time.Minute

// Options configure a Manager.
type Options struct {
	// Plugin reaches the cgroup plugin: HostPlugin(host) in the agent.
	// Nil: no cgroup plugin, ever.
	Plugin Plugin
	// Capacity and Cgroups are the machine's (core/node/machine).
	Capacity *machine.Capacity
	Cgroups  *machine.Cgroups
	// NodeName and RootDir are shown to the plugin in the node view.
	NodeName string
	RootDir  string
	// CgroupRoot is where the kubepods tree goes (cgroup_root); "" is "/".
	// It must exist.
	CgroupRoot string
	// CgroupDriver is cgroup_driver; only "cgroupfs" ("" too) is
	// supported.
	CgroupDriver string
	// EvictionReservation says what the eviction strategy's hard
	// thresholds hold back from pods (the eviction plugin's
	// GetNodeReservation); nil: nothing.
	EvictionReservation func(ctx context.Context, capacity *typesv1.ResourceList) (*typesv1.ResourceList, error)
	// SingleProcessOOMKill (singleProcessOOMKill) keeps cgroup v2's
	// memory.oom.group off, so that the OOM killer takes one process of a
	// container, not all of them. cgroup v1 always behaves so.
	SingleProcessOOMKill bool
	// ReapplyInterval; 0 is DefaultReapplyInterval.
	ReapplyInterval time.Duration
	// Runtime, when set, turns the resource managers on: the cgroup
	// plugin's AllocateCPUs decides exclusive CPUs and pinned memory, kept
	// in RootDir's cpu_manager_state and memory_manager_state, and the
	// running containers' cpusets are reconciled every CPUReconcilePeriod
	// (cpu_manager_reconcile_period; 0 is DefaultCPUReconcilePeriod).
	Runtime            CPURuntime
	CPUReconcilePeriod time.Duration
	// SysFS is where the node's CPU and NUMA topology is read; "" is /sys.
	SysFS string
	// Devices reports the devices of an extended resource for the topology
	// manager's hints; false for a resource no devices plugin serves. Nil:
	// devices give no hints.
	Devices func(resource string) ([]Device, bool)
	// Registerer, when set, gets kubelet_cgroup_manager_duration_seconds.
	Registerer prometheus.Registerer
	Logger     hclog.Logger
	// NodeEvents gets upstream's NodeAllocatableEnforced once the pods'
	// cgroup is first applied; nil records nothing.
	NodeEvents *events.Node
}

// Manager applies the cgroup plugin's plans. It is safe for concurrent use.
type Manager struct {
	opts Options
	log  hclog.Logger
	tree tree
	// root is the cgroup root, cleaned ("/" or "/a/b").
	root string

	mu sync.Mutex
	// plans are the last good plans by pod UID.
	plans map[types.UID]*podPlan
	// stuck are pod cgroups whose removal found processes, by pod UID.
	stuck map[types.UID]string
	// pods are the active pods the loop last reported.
	pods []*v1.Pod
	// node is the last good node plan; nil until one succeeds.
	node *nodePlan
	// podsCgroup is the absolute path of the cgroup every pod lives in, from
	// the last good node plan; kept while the plugin is down, since the
	// cgroup stays.
	podsCgroup string
	// evictionReserved is the last reservation the eviction strategy gave.
	evictionReserved *typesv1.ResourceList
	// podsKnown: UpdatePods reported the active pods at least once.
	podsKnown bool
	// cpu is the CPU manager; nil without Runtime.
	cpu *cpuManager
	// noPluginLogged: the absence of a plugin has been logged since it was
	// last present.
	noPluginLogged bool

	// nodeTried is closed once Run has tried to apply the node's cgroups.
	nodeTried chan struct{}

	// nodeMu serialises node planning and applying.
	nodeMu sync.Mutex
	// enforced: the node's cgroups were applied once (guarded by nodeMu).
	enforced bool
}

// New checks the options and the cgroup root; Run starts the node-level work.
func New(opts Options) (*Manager, error) {
	switch opts.CgroupDriver {
	case "", "cgroupfs":
	case "systemd":
		return nil, errors.New(`cgroup_driver "systemd" is not supported: microlet manages cgroups with the cgroupfs driver only; set cgroup_driver = "cgroupfs" and configure the runtime likewise (containerd: SystemdCgroup = false)`)
	default:
		return nil, fmt.Errorf("unknown cgroup_driver %q; expected \"cgroupfs\"", opts.CgroupDriver)
	}
	if opts.Capacity == nil || opts.Cgroups == nil {
		return nil, errors.New("cgroupmanager: Capacity and Cgroups are required")
	}
	root := path.Clean("/" + opts.CgroupRoot)
	if opts.CgroupRoot != "" && opts.CgroupRoot != root {
		return nil, fmt.Errorf("cgroup_root %q is not a clean absolute cgroup path; expected a path such as %q", opts.CgroupRoot, root)
	}
	t, err := newTree(opts.Cgroups)
	if err != nil {
		return nil, err
	}
	if opts.Registerer != nil {
		if t, err = newTimedTree(t, opts.Registerer); err != nil {
			return nil, err
		}
	}
	if !t.exists(root) {
		return nil, fmt.Errorf("cgroup_root %q does not exist in every cgroup hierarchy (cgroup %s); create it first", root, opts.Cgroups.Mode)
	}
	if opts.ReapplyInterval <= 0 {
		opts.ReapplyInterval = DefaultReapplyInterval
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	var cpu *cpuManager
	if opts.Runtime != nil {
		if opts.CPUReconcilePeriod <= 0 {
			opts.CPUReconcilePeriod = DefaultCPUReconcilePeriod
		}
		if opts.SysFS == "" {
			opts.SysFS = "/sys"
		}
		if cpu, err = newCPUManager(opts.RootDir, opts.SysFS, opts.Capacity); err != nil {
			return nil, err
		}
	}
	return &Manager{
		cpu:   cpu,
		opts:  opts,
		log:   opts.Logger,
		tree:  t,
		root:  root,
		plans: map[types.UID]*podPlan{},
		stuck: map[types.UID]string{},

		nodeTried: make(chan struct{}),
	}, nil
}

// NodeTried is closed once Run has tried to apply the node's cgroups, so
// that what reads them (the eviction manager's first cycle) does not run
// before the pods' cgroup exists, as the kubelet starts its eviction
// manager after its container manager.
func (m *Manager) NodeTried() <-chan struct{} { return m.nodeTried }

// Run plans and applies the node's cgroups at once and then every
// ReapplyInterval, retrying the removal of stuck pod cgroups each time,
// until ctx ends.
func (m *Manager) Run(ctx context.Context) {
	if m.cpu != nil {
		go m.runCPUReconcile(ctx)
	}
	ticker := time.NewTicker(m.opts.ReapplyInterval)
	defer ticker.Stop()
	reapply := func() {
		if err := m.syncNode(ctx); err != nil && ctx.Err() == nil {
			m.log.Warn("node cgroups not updated; retrying", "error", err, "in", m.opts.ReapplyInterval)
		}
		m.removeStuck()
	}
	reapply()
	close(m.nodeTried)
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		}
		reapply()
	}
}

// absolute is a plan's cgroup path under the cgroup root.
func (m *Manager) absolute(cgroup string) string { return path.Join(m.root, cgroup) }

// nodeView is the node as the plugin sees it.
func (m *Manager) nodeView() *typesv1.Node {
	m.mu.Lock()
	defer m.mu.Unlock()
	view := &typesv1.Node{
		Name:          m.opts.NodeName,
		Capacity:      m.opts.Capacity.ResourceList(),
		CgroupDriver:  "cgroupfs",
		CgroupVersion: int32(m.opts.Cgroups.Version()),
		RootDir:       m.opts.RootDir,
	}
	if m.node != nil {
		view.Allocatable = m.node.allocatable
	}
	return view
}

// noPlugin logs once, until a plugin shows up again, that pods run on the
// runtime's defaults.
func (m *Manager) noPlugin() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if !m.noPluginLogged {
		m.noPluginLogged = true
		m.log.Warn("no cgroup plugin is configured: pods without a plan run with the runtime's default cgroup and no resource settings, and every pod is admitted")
	}
}

// pluginAnswered notes that a plugin is configured again.
func (m *Manager) pluginAnswered() {
	m.mu.Lock()
	m.noPluginLogged = false
	m.mu.Unlock()
}
