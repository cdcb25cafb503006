package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Slot is where one plugin serves: a *Plugin, what Host.Kind returns, or a
// test's stand-in.
type Slot interface {
	// Acquire returns a lease on the serving process, or an error wrapping
	// ErrUnavailable when none serves; it does not wait.
	Acquire(ctx context.Context) (*Lease, error)
}

// ErrNotConfigured means the config has no plugin of the kind. It wraps
// ErrUnavailable: a kind whose fallback is the same either way need not
// tell the two apart.
var ErrNotConfigured = fmt.Errorf("%w: not configured", ErrUnavailable)

// Kind is the slot of a singleton kind, looked up on every Acquire, so that
// a plugin configured, swapped or removed by a reload is followed at once.
func (h *Host) Kind(kind Kind) KindSlot { return KindSlot{host: h, kind: kind} }

// KindSlot is the slot of a singleton kind (Host.Kind).
type KindSlot struct {
	host *Host
	kind Kind
}

// Acquire leases the kind's serving process; the error wraps
// ErrNotConfigured when the config has no plugin of the kind.
func (s KindSlot) Acquire(ctx context.Context) (*Lease, error) {
	p := s.host.Plugin(s.kind)
	if p == nil {
		return nil, notConfigured{s.kind}
	}
	return p.Acquire(ctx)
}

// Name is the configured plugin's name; "" when none is configured.
func (s KindSlot) Name() string {
	if p := s.host.Plugin(s.kind); p != nil {
		return p.Name()
	}
	return ""
}

// notConfigured is the error of a kind the config has no plugin of.
type notConfigured struct{ kind Kind }

func (e notConfigured) Error() string {
	return fmt.Sprintf("%v: no %s plugin is configured", ErrUnavailable, e.kind)
}

func (e notConfigured) Is(target error) bool {
	return target == ErrNotConfigured || target == ErrUnavailable
}

// Conn is one plugin process as a call sees it: the kind's gRPC client and
// the capabilities that same process declared.
type Conn[C any] struct {
	Client       C
	Capabilities []string
}

// Caller is how a kind's core component reaches its plugin: Client in the
// agent, a stand-in in tests.
type Caller[C any] interface {
	// Call runs fn on one serving process. Its error wraps ErrUnavailable
	// when no process serves or the process was lost during the call.
	Call(ctx context.Context, fn func(ctx context.Context, conn Conn[C]) error) error
}

// Client is a kind's typed client: each call leases the slot's serving
// process once and hands fn that process's client and capabilities, so
// that a hot swap can never pair one process's capabilities with another's
// answers.
type Client[C any] struct {
	Slot Slot
	// New makes the kind's gRPC client (say cgroupv1.NewCgroupServiceClient).
	New func(grpc.ClientConnInterface) C
	// Timeout bounds each call; 0 is the host's CallTimeout.
	Timeout time.Duration
}

// Call implements Caller.
func (c Client[C]) Call(ctx context.Context, fn func(ctx context.Context, conn Conn[C]) error) error {
	lease, err := c.Slot.Acquire(ctx)
	if err != nil {
		return err
	}
	defer lease.Release()
	timeout := c.Timeout
	if timeout == 0 && lease.host != nil {
		timeout = lease.host.opts.CallTimeout
	}
	callCtx, cancel := withCallTimeout(ctx, timeout)
	defer cancel()
	err = fn(callCtx, Conn[C]{Client: c.New(lease.Conn), Capabilities: lease.Capabilities})
	if err == nil || ctx.Err() != nil {
		return err
	}
	if callCtx.Err() != nil && lease.process != nil {
		// The call ran out of the host's time, not the caller's.
		lease.process.suspect()
	}
	if lease.lostDuring(err) {
		if pr := lease.process; pr != nil {
			return fmt.Errorf("%w: plugin %s (pid %d) was lost during the call: %w", ErrUnavailable, pr.spec, pr.pid, err)
		}
		return fmt.Errorf("%w: the plugin process was lost during the call: %w", ErrUnavailable, err)
	}
	return err
}

// Name is the name of the plugin in the slot, when the slot has one.
func (c Client[C]) Name() string {
	if named, ok := c.Slot.(interface{ Name() string }); ok {
		return named.Name()
	}
	return ""
}

// Ask calls the plugin through p and returns fn's answer, its error sorted
// by Classify; what names the call in the error. A nil p is a kind the
// config has no plugin of (ErrNotConfigured).
func Ask[C, T any](ctx context.Context, p Caller[C], what string, fn func(ctx context.Context, conn Conn[C]) (T, error)) (T, error) {
	var out T
	if p == nil {
		return out, fmt.Errorf("%s: %w", what, ErrNotConfigured)
	}
	err := p.Call(ctx, func(ctx context.Context, conn Conn[C]) error {
		var err error
		out, err = fn(ctx, conn)
		return err
	})
	if err = Classify(ctx, err); err != nil && !errors.Is(err, ctx.Err()) {
		err = fmt.Errorf("%s: %w", what, err)
	}
	return out, err
}

// Classify sorts a plugin call's error, the one rule every kind follows
// (ARCHITECTURE.md, Plugin protocol): nil stays nil; every "ask again
// later" wraps ErrUnavailable: no process serves or it was lost, or the
// plugin answered UNAVAILABLE, RESOURCE_EXHAUSTED, DEADLINE_EXCEEDED or
// FAILED_PRECONDITION (not configured yet); the caller's own cancellation
// is ctx.Err(); anything else is the plugin's answer, its status intact.
func Classify(ctx context.Context, err error) error {
	switch {
	case err == nil, errors.Is(err, ErrUnavailable):
		return err
	case ctx.Err() != nil:
		return ctx.Err()
	}
	switch status.Code(err) {
	case codes.Unavailable, codes.ResourceExhausted, codes.DeadlineExceeded, codes.FailedPrecondition:
		return retryable{err}
	}
	return err
}

// retryable is a plugin's answer that means "ask again later": it wraps
// ErrUnavailable, and reads as the answer.
type retryable struct{ err error }

func (r retryable) Error() string   { return r.err.Error() }
func (r retryable) Unwrap() []error { return []error{ErrUnavailable, r.err} }

// withCallTimeout bounds ctx by timeout unless it ends earlier anyway; no
// timeout leaves ctx as it is.
func withCallTimeout(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if deadline, ok := ctx.Deadline(); timeout <= 0 || ok && time.Until(deadline) <= timeout {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, timeout)
}

// lostDuring says whether a call's error means the process was lost (died,
// retired, or its connection broke) rather than that the plugin answered
// with an error. A plugin may itself answer UNAVAILABLE (retry later), so an
// UNAVAILABLE status alone proves nothing: a dead process is known from its
// exit, and a dying one from a failing health check.
func (l *Lease) lostDuring(err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.Canceled: // Canceled: go-plugin closed the connection of a dead process
	default:
		return false
	}
	if l.host == nil {
		select {
		case <-l.Done:
			return true
		default:
			return false
		}
	}
	if l.process.hasExited() {
		return true
	}
	return l.process.checkHealth(context.Background(), l.host.opts.HealthTimeout) != nil
}
