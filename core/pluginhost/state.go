package pluginhost

import "time"

// State is where a slot is in its lifecycle:
//
//	Starting   -> Serving     the first process is configured and healthy
//	Starting   -> Failed      the launch was refused (trust, handshake, config)
//	Serving    -> Serving     hot swap: a new process replaced the old one
//	Serving    -> Restarting  the process exited or hung
//	Restarting -> Serving     a new process is configured and healthy
//	Restarting -> Restarting  the new process could not start; back off, try again
//	Restarting -> Failed      more than RestartBudget restarts in RestartWindow
//	Failed     -> Starting    a Reconcile naming the slot, or its binary changed
//	any        -> Stopped     the slot was removed, or the host closed
type State int

const (
	// Starting: the slot's first process is being launched.
	Starting State = iota
	// Serving: a process answers calls.
	Serving
	// Restarting: the process exited or hung; a new one is being launched,
	// possibly after a backoff.
	Restarting
	// Failed: the slot gave up (launch refused or restart budget spent) and
	// waits for the operator: a Reconcile naming it or a new binary.
	Failed
	// Stopped: the slot was removed or the host closed.
	Stopped
)

func (s State) String() string {
	switch s {
	case Starting:
		return "starting"
	case Serving:
		return "serving"
	case Restarting:
		return "restarting"
	case Failed:
		return "failed"
	case Stopped:
		return "stopped"
	default:
		return "unknown"
	}
}

// Status describes one slot.
type Status struct {
	Kind  Kind
	Name  string
	State State
	// PID of the serving process; 0 when none serves.
	PID int
	// PluginVersion and APIVersion of the serving process.
	PluginVersion string
	APIVersion    string
	// Restarts and Swaps since the slot was created.
	Restarts int
	Swaps    int
	// LastError is the latest failure (exit, hang, refused launch or swap);
	// empty if none since the slot last started afresh (config, reload,
	// binary change).
	LastError string
	// ConfigNotApplied says why the serving process does not run what the
	// config asks for (a binary that does not exist, a config the new
	// process refused: the old process keeps serving); empty when it does.
	ConfigNotApplied string
	// Since is when the slot entered State.
	Since time.Time
}

// EventType says what happened to a slot.
type EventType string

// Event types, with the meaning of Event.Duration for each.
const (
	// EventStarted: a slot's process was launched by Reconcile or after
	// Failed. Duration: the launch.
	EventStarted EventType = "started"
	// EventExited: the serving process exited unasked. Duration: how long it
	// ran.
	EventExited EventType = "exited"
	// EventHung: health checks failed; the process group is being killed.
	// Duration: since the last successful health check.
	EventHung EventType = "hung"
	// EventRestarted: a new process serves after an exit. Duration: the
	// outage, from exit to serving.
	EventRestarted EventType = "restarted"
	// EventFailed: the slot gave up (State Failed). Duration: zero.
	EventFailed EventType = "failed"
	// EventSwapped: a new process replaced a serving one. Duration: from
	// the start of the new launch to the switch.
	EventSwapped EventType = "swapped"
	// EventSwapFailed: a replacement could not start; the old process keeps
	// serving. Duration: the failed attempt.
	EventSwapFailed EventType = "swap-failed"
	// EventStopped: the slot was removed or the host closed. Duration: how
	// long its last process ran.
	EventStopped EventType = "stopped"
)

// Event is reported to Options.OnEvent.
type Event struct {
	Type EventType
	Kind Kind
	Name string
	// PID of the process the event is about (for swaps: the new one).
	PID      int
	Reason   string
	Duration time.Duration
	Time     time.Time
}
