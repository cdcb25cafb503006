// Package memnotify arms the kernel's memory pressure notifications, so that
// the eviction manager starts a cycle the moment memory runs short instead
// of at its next periodic tick.
//
// On cgroup v1 (and hybrid) it arms memcg usage thresholds, as the kubelet's
// memcg notifier does (pkg/kubelet/eviction/threshold_notifier_linux.go): an
// eventfd registered through cgroup.event_control fires when
// memory.usage_in_bytes crosses a level. cgroup v2 has no usage thresholds;
// there it watches memory.events (memory.high and memory.max breaches, OOM)
// and arms a PSI trigger on the cgroup's memory.pressure (the node's:
// /proc/pressure/memory), which fire when the cgroup starts to reclaim or
// stall, whatever the level. docs/eviction.md describes both.
package memnotify

import (
	"errors"
	"fmt"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/microlet/microlet/core/node/machine"
)

// DefaultPSITrigger is the PSI trigger armed on cgroup v2: some task of the
// cgroup stalled on memory for 200 ms within two seconds (10 %), a cgroup
// that is reclaiming hard, not one that merely touched its limit once. The
// window is a multiple of 2 s because the kernel refuses other windows to a
// process without CAP_SYS_RESOURCE, which a containerised agent may lack.
const DefaultPSITrigger = "some 200000 2000000"

// defaultProcPressure is where the kernel shows the node's pressure.
const defaultProcPressure = "/proc/pressure"

// Threshold asks for a notification when a cgroup's memory usage crosses a
// level (the eviction protocol's MemoryNotification).
type Threshold struct {
	// Cgroup is "" for the node (the root of the hierarchy) or a path below
	// the cgroup root, such as "/kubepods".
	Cgroup string
	// UsageBytes is the level of memory usage (page cache included).
	UsageBytes uint64
}

// Event says that the kernel reported memory pressure on a cgroup.
type Event struct {
	// Cgroup is the Threshold's cgroup.
	Cgroup string
	// Source is what fired: "threshold" (v1), "memory.events" or "psi" (v2).
	Source string
}

// Options configure a Notifier.
type Options struct {
	// Cgroups is the machine's cgroup setup (core/node/machine): its mode says
	// which mechanism applies and where the hierarchies are mounted.
	Cgroups *machine.Cgroups
	// CgroupRoot is the agent's cgroup_root; every cgroup but the node's
	// is below it.
	CgroupRoot string
	// PSITrigger is the trigger written to memory.pressure on cgroup v2;
	// "" is DefaultPSITrigger.
	PSITrigger string
	// ProcPressure is where the node's PSI files are; "" is /proc/pressure.
	ProcPressure string
	Logger       hclog.Logger
}

// Notifier keeps a set of kernel notifications armed and reports when one
// fires. It is safe for concurrent use.
type Notifier struct {
	opts   Options
	log    hclog.Logger
	poller *poller
	events chan Event

	mu    sync.Mutex
	armed map[string]*watch // by watchKey
}

// New starts a notifier with nothing armed.
func New(opts Options) (*Notifier, error) {
	if opts.Cgroups == nil {
		return nil, errors.New("memnotify: Options.Cgroups is required")
	}
	if opts.Cgroups.Version() == 1 && opts.Cgroups.V1["memory"] == "" {
		return nil, errors.New("memnotify: the cgroup v1 memory controller is not mounted")
	}
	if opts.PSITrigger == "" {
		opts.PSITrigger = DefaultPSITrigger
	}
	if opts.ProcPressure == "" {
		opts.ProcPressure = defaultProcPressure
	}
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	n := &Notifier{opts: opts, log: opts.Logger, events: make(chan Event, 1), armed: map[string]*watch{}}
	p, err := newPoller(n.deliver)
	if err != nil {
		return nil, err
	}
	n.poller = p
	return n, nil
}

// Events delivers notifications. Notifications that arrive while one is
// pending are merged into it: the receiver runs one cycle for all of them.
func (n *Notifier) Events() <-chan Event { return n.events }

func (n *Notifier) deliver(e Event) {
	select {
	case n.events <- e:
	default:
	}
}

// Arm makes the armed notifications those for thresholds: new ones are armed
// before stale ones are dropped, so no crossing falls between the two sets.
// A threshold that cannot be armed is reported; the others are armed anyway.
func (n *Notifier) Arm(thresholds []Threshold) error {
	n.mu.Lock()
	defer n.mu.Unlock()
	want := n.plan(thresholds)
	var errs []error
	for key, spec := range want {
		if w, ok := n.armed[key]; ok && !w.closed.Load() {
			continue // armed, and alive
		}
		w, err := spec.open()
		if errors.Is(err, errNotOffered) {
			n.log.Debug("memory notification not offered by the kernel", "cgroup", spec.event.Cgroup, "source", spec.event.Source, "file", spec.file, "error", err)
			continue
		}
		if err == nil {
			err = n.poller.add(w)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("arming the %s notification of cgroup %q (%s): %w", spec.event.Source, spec.event.Cgroup, spec.file, err))
			continue
		}
		n.armed[key] = w
	}
	for key, w := range n.armed {
		if _, ok := want[key]; !ok {
			n.poller.remove(w)
			delete(n.armed, key)
		}
	}
	return errors.Join(errs...)
}

// Exceeded lists the armed usage thresholds whose level the cgroup's usage
// has already passed, as Armed names them. The kernel signals a threshold
// only when usage crosses it, so such a threshold will not fire again
// however far usage grows: page cache that no pod's working set counts can
// carry usage past a level before the signal it guards is met. While one is
// exceeded the caller must look for itself (docs/eviction.md). A threshold
// whose usage cannot be read counts as exceeded: its silence proves nothing.
func (n *Notifier) Exceeded() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	var out []string
	for key, w := range n.armed {
		if w.exceeded == nil {
			continue
		}
		if over, err := w.exceeded(); over || err != nil {
			out = append(out, key)
		}
	}
	slices.Sort(out)
	return out
}

// Armed lists what is armed, sorted, for logs and tests: "threshold <cgroup>
// <bytes>", "memory.events <cgroup>", "psi <cgroup>".
func (n *Notifier) Armed() []string {
	n.mu.Lock()
	defer n.mu.Unlock()
	out := make([]string, 0, len(n.armed))
	for key := range n.armed {
		out = append(out, key)
	}
	slices.Sort(out)
	return out
}

// Close disarms everything and stops delivering.
func (n *Notifier) Close() error {
	n.mu.Lock()
	defer n.mu.Unlock()
	for key, w := range n.armed {
		n.poller.remove(w)
		delete(n.armed, key)
	}
	return n.poller.close()
}

// plan is the watches thresholds need, by key.
func (n *Notifier) plan(thresholds []Threshold) map[string]watchSpec {
	want := map[string]watchSpec{}
	if n.opts.Cgroups.Version() == 1 {
		for _, t := range thresholds {
			spec := thresholdSpec(n.v1Dir(t.Cgroup), t)
			want[spec.key] = spec
		}
		return want
	}
	for _, t := range thresholds {
		for _, spec := range v2Specs(n.v2Dir(t.Cgroup), n.opts.ProcPressure, n.opts.PSITrigger, t.Cgroup) {
			want[spec.key] = spec
		}
	}
	return want
}

// cgroupPath is the cgroup of a threshold from the root of the hierarchy:
// the node's is the root itself, every other is below cgroup_root.
func (n *Notifier) cgroupPath(cgroup string) string {
	if cgroup == "" {
		return "/"
	}
	return path.Join("/", n.opts.CgroupRoot, cgroup)
}

func (n *Notifier) v1Dir(cgroup string) string {
	return filepath.Join(n.opts.Cgroups.V1["memory"], n.cgroupPath(cgroup))
}

func (n *Notifier) v2Dir(cgroup string) string {
	return filepath.Join(n.opts.Cgroups.Unified, n.cgroupPath(cgroup))
}

// watchKey names a watch; equal keys are the same kernel notification.
func watchKey(source, cgroup string, level uint64) string {
	if source == sourceThreshold {
		return source + " " + strconv.Quote(cgroup) + " " + strconv.FormatUint(level, 10)
	}
	return source + " " + strconv.Quote(cgroup)
}
