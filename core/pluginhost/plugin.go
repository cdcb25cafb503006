package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"google.golang.org/grpc"
)

// ErrUnavailable means a plugin does not serve now: it is starting,
// restarting or failed, it died during the call, or it is not configured.
// The caller applies its kind's fallback.
var ErrUnavailable = errors.New("plugin unavailable")

// Plugin is a slot: the place of one configured plugin, served by one
// process at a time. It outlives its processes (restarts, swaps, a switch
// to another plugin of a singleton kind), so callers keep it; a slot that
// Reconcile removes stays Stopped, and a later spec for it gets a new slot.
type Plugin struct {
	host *Host
	kind Kind

	// serving is the process calls go to; nil unless State is Serving. It
	// is switched before an old process is retired, so a caller that loses
	// the race for a retiring process finds the new one here.
	serving atomic.Pointer[process]

	mu       sync.Mutex
	name     string
	binary   string
	state    State
	since    time.Time
	current  *process // the serving process, for Status
	lastErr  string
	restarts int
	swaps    int

	// notApplied is why the serving process does not run the spec the
	// config last asked for (a swap to it failed); empty when it does.
	notApplied string

	commands      chan command
	binaryChanged chan struct{} // a pending "binary changed" notice; capacity 1
	stopped       chan struct{} // closed when the supervisor has returned
}

func newPlugin(h *Host, kind Kind, name string) *Plugin {
	return &Plugin{
		host:          h,
		kind:          kind,
		name:          name,
		state:         Starting,
		since:         time.Now(),
		commands:      make(chan command),
		binaryChanged: make(chan struct{}, 1),
		stopped:       make(chan struct{}),
	}
}

// Kind is the slot's plugin kind.
func (p *Plugin) Kind() Kind { return p.kind }

// Name is the name of the plugin configured in the slot. For singleton
// kinds it changes when the operator configures another plugin of the kind.
func (p *Plugin) Name() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.name
}

// State is where the slot is in its lifecycle.
func (p *Plugin) State() State {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.state
}

// Status describes the slot.
func (p *Plugin) Status() Status {
	p.mu.Lock()
	defer p.mu.Unlock()
	st := Status{
		Kind:      p.kind,
		Name:      p.name,
		State:     p.state,
		Restarts:  p.restarts,
		Swaps:     p.swaps,
		LastError: p.lastErr,
		Since:     p.since,

		ConfigNotApplied: p.notApplied,
	}
	if p.current != nil {
		st.PID = p.current.pid
		st.PluginVersion = p.current.identity.PluginVersion
		st.APIVersion = p.current.apiVersion
	}
	return st
}

// Lease is the use of one serving process. Release must be called.
type Lease struct {
	// Conn reaches the process; valid until Release.
	Conn *grpc.ClientConn
	// Done is closed when the process is being retired (swap) or has died:
	// holders of long-lived streams end them and Acquire again.
	Done <-chan struct{}
	// Identity, Capabilities and APIVersion describe the process.
	Identity     Identity
	Capabilities []string
	APIVersion   string
	// Release ends the lease; later calls do nothing.
	Release func()

	// host and process are nil in a test's stand-in lease.
	host    *Host
	process *process
}

// Acquire returns a lease on the serving process, or ErrUnavailable when
// the slot does not serve. It never waits for a process.
func (p *Plugin) Acquire(ctx context.Context) (*Lease, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for {
		pr := p.serving.Load()
		if pr == nil {
			return nil, p.unavailable()
		}
		if pr.lease() {
			var once sync.Once
			return &Lease{
				Conn:         pr.conn,
				Done:         pr.done,
				Identity:     pr.identity,
				Capabilities: pr.capabilities,
				APIVersion:   pr.apiVersion,
				Release:      func() { once.Do(pr.release) },
				host:         p.host,
				process:      pr,
			}, nil
		}
		// pr is retiring, so serving was switched already: load again.
	}
}

func (p *Plugin) unavailable() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lastErr == "" {
		return fmt.Errorf("%w: plugin %s/%s is %s", ErrUnavailable, p.kind, p.name, p.state)
	}
	return fmt.Errorf("%w: plugin %s/%s is %s (last error: %s)", ErrUnavailable, p.kind, p.name, p.state, p.lastErr)
}

// setState moves the slot to state; cause, if not nil, becomes LastError.
func (p *Plugin) setState(state State, cause error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if state != Serving {
		p.serving.Store(nil)
		p.current = nil
	}
	if p.state != state {
		p.state = state
		p.since = time.Now()
	}
	if state == Starting {
		p.lastErr = "" // a fresh start: the failures before it are stale
	}
	if cause != nil {
		p.lastErr = cause.Error()
	}
}

// servingCause says why a process starts serving, for the slot's counters.
type servingCause int

const (
	startedToServe servingCause = iota
	restartedToServe
	swappedToServe
)

// setServing switches the slot to pr, and counts it, in one step.
func (p *Plugin) setServing(pr *process, cause servingCause) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch cause {
	case restartedToServe:
		p.restarts++
	case swappedToServe:
		p.swaps++
	}
	p.name = pr.spec.Name
	p.binary = pr.spec.Binary
	p.current = pr
	if p.state != Serving {
		p.state = Serving
		p.since = time.Now()
	}
	p.serving.Store(pr)
}

// setSpec records which plugin the slot is about to run.
func (p *Plugin) setSpec(s resolvedSpec) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.name = s.Name
	p.binary = s.Binary
}

// setApplied records whether the slot runs the spec the config asks for:
// err is why not, nil when it does.
func (p *Plugin) setApplied(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.notApplied = ""
	if err != nil {
		p.notApplied = err.Error()
	}
}

func (p *Plugin) setLastError(err error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.lastErr = err.Error()
}

// binaryName is the file name the slot's plugin runs from, for the watcher.
func (p *Plugin) binaryName() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.binary
}

// notifyBinaryChanged tells the supervisor, without waiting, that the
// slot's binary changed; notices coalesce.
func (p *Plugin) notifyBinaryChanged() {
	select {
	case p.binaryChanged <- struct{}{}:
	default:
	}
}

// send hands cmd to the supervisor and waits for its answer.
func (p *Plugin) send(cmd command) error {
	cmd.reply = make(chan error, 1)
	select {
	case p.commands <- cmd:
	case <-p.stopped:
		return fmt.Errorf("plugin %s/%s: slot stopped", p.kind, p.Name())
	}
	return <-cmd.reply
}
