package shutdown

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/cluster/events"
	"github.com/microlet/microlet/core/pods/podworkers"
	"github.com/microlet/microlet/core/pods/status"
	"github.com/microlet/microlet/core/pods/syncloop"
)

// ErrShuttingDown is the node's NotReady reason while it shuts down,
// upstream's ShutdownStatus error text.
var ErrShuttingDown = errors.New("node is shutting down")

// reconnectPeriod is how long the manager waits before connecting again
// after the bus went away (upstream dbusReconnectPeriod).
const reconnectPeriod = time.Second

// Pods are the node's pods as the manager stops them: the sync loop.
type Pods interface {
	ActivePods() []*v1.Pod
	// KillPod stops a pod through its worker and returns once its
	// containers are stopped.
	KillPod(pod *v1.Pod, evict bool, gracePeriod *int64, statusFn podworkers.PodStatusFunc) error
}

// Options configure a Manager.
type Options struct {
	// Periods are the groups (Periods); none turns the manager off.
	Periods []Period
	Pods    Pods
	// BusAddress is the system bus; "": DBUS_SYSTEM_BUS_ADDRESS, or the
	// standard socket.
	BusAddress string
	// LogindConfDir is where InhibitDelayMaxSec is raised; "":
	// DefaultLogindConfDir.
	LogindConfDir string
	// OnChange is called when the node starts or stops shutting down:
	// its status is due at once.
	OnChange func()
	// NodeEvents records the node's Shutdown events; nil records none.
	NodeEvents *events.Node
	// StateDir holds StateFile (the root dir, as upstream's); "": none
	// kept. Registerer gets the kubelet's graceful_shutdown_*_time_seconds
	// gauges; nil: not exported.
	StateDir   string
	Registerer prometheus.Registerer
	Logger     hclog.Logger
}

// Manager holds the inhibitor lock and stops the pods when logind says
// the machine shuts down.
type Manager struct {
	opts   Options
	log    hclog.Logger
	record *record

	mu           sync.Mutex
	shuttingDown bool
	lock         int // the inhibitor lock's descriptor; -1: none
}

// New returns a manager; Enabled says whether it has anything to do. The
// gauges are registered either way, as the kubelet's.
func New(opts Options) (*Manager, error) {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	if opts.LogindConfDir == "" {
		opts.LogindConfDir = DefaultLogindConfDir
	}
	if opts.NodeEvents == nil {
		opts.NodeEvents = events.NewNode(nil, "")
	}
	r, err := newRecord(opts.StateDir, opts.Registerer)
	if err != nil {
		return nil, err
	}
	return &Manager{opts: opts, log: opts.Logger, record: r, lock: -1}, nil
}

// Enabled: a grace period is configured.
func (m *Manager) Enabled() bool { return len(m.opts.Periods) > 0 }

// ShuttingDown is ErrShuttingDown while the node shuts down, else nil.
func (m *Manager) ShuttingDown() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.shuttingDown {
		return ErrShuttingDown
	}
	return nil
}

// Name is the admitter's name.
func (m *Manager) Name() string { return "node-shutdown" }

var _ syncloop.PureAdmitter = (*Manager)(nil)

// Pure: admitting a pod changes nothing here.
func (m *Manager) Pure() bool { return true }

// Admit refuses every new pod while the node shuts down, with upstream's
// reason and message.
func (m *Manager) Admit(context.Context, *v1.Pod, []*v1.Pod) syncloop.Admission {
	if m.ShuttingDown() != nil {
		return syncloop.Admission{Reason: NotAdmittedReason, Message: notAdmittedMessage}
	}
	return syncloop.Admission{Admit: true}
}

// Start connects to logind, raises its inhibit delay if it is below the
// groups' total, takes the lock and watches for the shutdown; an error
// here is the node's start failing, as upstream. Afterwards, a lost bus is
// connected again every second until ctx ends.
func (m *Manager) Start(ctx context.Context) error {
	l, events, err := m.connect()
	if err != nil {
		return err
	}
	m.log.Info("graceful node shutdown is on", "periods", m.opts.Periods)
	if err := m.record.load(); err != nil {
		m.log.Error("failed to load graceful shutdown state", "error", err)
	}
	go func() {
		for {
			m.handle(ctx, l, events)
			l.close()
			for {
				select {
				case <-ctx.Done():
					return
				case <-time.After(reconnectPeriod):
				}
				if l, events, err = m.connect(); err == nil {
					break
				}
				m.log.Error("unable to watch the node for shutdown events", "error", err)
			}
		}
	}()
	return nil
}

func (m *Manager) connect() (*logind, <-chan bool, error) {
	l, err := connectLogind(m.opts.BusAddress, m.opts.LogindConfDir)
	if err != nil {
		return nil, nil, err
	}
	if err := m.ensureDelay(l); err != nil {
		l.close()
		return nil, nil, err
	}
	if err := m.acquire(l); err != nil {
		l.close()
		return nil, nil, err
	}
	events, err := l.watch()
	if err != nil {
		m.release()
		l.close()
		return nil, nil, err
	}
	return l, events, nil
}

// ensureDelay raises logind's InhibitDelayMaxSec to the groups' total
// when it is less, and checks that logind took it.
func (m *Manager) ensureDelay(l *logind) error {
	current, err := l.inhibitDelay()
	if err != nil {
		return err
	}
	requested := Requested(m.opts.Periods)
	if requested <= current {
		return nil
	}
	m.log.Info("raising logind's InhibitDelayMaxSec", "from", current, "to", requested)
	if err := l.raiseInhibitDelay(requested); err != nil {
		return err
	}
	if current, err = l.inhibitDelay(); err != nil {
		return err
	}
	if requested > current {
		return errors.New("logind's InhibitDelayMaxSec is " + current.String() + " after the override, less than the shutdown grace period " + requested.String())
	}
	return nil
}

// acquire takes a new lock, then lets go of the one held.
func (m *Manager) acquire(l *logind) error {
	fd, err := l.inhibit()
	if err != nil {
		return err
	}
	m.release()
	m.mu.Lock()
	m.lock = fd
	m.mu.Unlock()
	return nil
}

// release closes the lock's descriptor: logind lets the shutdown go on.
func (m *Manager) release() {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.lock >= 0 {
		_ = unix.Close(m.lock)
		m.lock = -1
	}
}

// handle acts on PrepareForShutdown until the connection ends or ctx does.
func (m *Manager) handle(ctx context.Context, l *logind, prepare <-chan bool) {
	for {
		select {
		case <-ctx.Done():
			return
		case active, ok := <-prepare:
			if !ok {
				m.log.Error("the system bus connection ended; watching for shutdown again")
				return
			}
			msg := "Shutdown manager detected shutdown cancellation"
			if active {
				msg = "Shutdown manager detected shutdown event"
			}
			m.log.Info(msg)
			m.opts.NodeEvents.Event(v1.EventTypeNormal, events.NodeShutdown, msg)
			m.mu.Lock()
			m.shuttingDown = active
			m.mu.Unlock()
			if m.opts.OnChange != nil {
				m.opts.OnChange()
			}
			if active {
				m.processShutdown()
				m.log.Info("pods stopped for the node's shutdown; inhibitor lock released")
			} else if err := m.acquire(l); err != nil {
				// Upstream ignores it too: the next connection takes one.
				m.log.Error("taking the inhibitor lock again after the cancelled shutdown", "error", err)
			}
		}
	}
}

// processShutdown stops the pods between the state file's start and end
// times, then releases the lock: the end is on disk before the machine
// goes down (upstream processShutdownEvent).
func (m *Manager) processShutdown() {
	start := time.Now()
	if err := m.record.begin(start); err != nil {
		m.log.Error("failed to store graceful shutdown state", "error", err)
	}
	m.stopPods()
	if err := m.record.finish(start, time.Now()); err != nil {
		m.log.Error("failed to store graceful shutdown state", "error", err)
	}
	m.release()
}

// stopPods kills the active pods group by group, lowest priority first;
// each group gets its period, then the next one starts, stopped or not.
func (m *Manager) stopPods() {
	for _, g := range Groups(m.opts.Periods, m.opts.Pods.ActivePods()) {
		if len(g.Pods) == 0 {
			continue
		}
		var wg sync.WaitGroup
		for _, pod := range g.Pods {
			grace := PodGrace(pod, g.Period)
			wg.Add(1)
			go func() {
				defer wg.Done()
				m.log.Info("stopping pod for the node's shutdown", "pod", pod.Namespace+"/"+pod.Name, "grace_seconds", grace)
				err := m.opts.Pods.KillPod(pod, false, &grace, status.ShutdownStatusFunc(pod, TerminatedReason, TerminatedMessage))
				if err != nil {
					m.log.Warn("stopping pod for the node's shutdown", "pod", pod.Namespace+"/"+pod.Name, "error", err)
				}
			}()
		}
		done := make(chan struct{})
		go func() { wg.Wait(); close(done) }()
		timer := time.NewTimer(g.Grace)
		select {
		case <-done:
			m.log.Info("pods of the group stopped", "priority", g.Priority, "grace", g.Grace)
		case <-timer.C:
			m.log.Warn("pods of the group did not stop within its grace period", "priority", g.Priority, "grace", g.Grace)
		}
		timer.Stop()
	}
}
