package pluginhost

import (
	"context"
	"fmt"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// Call runs fn on the slot's serving process with the host's CallTimeout
// (unless ctx has an earlier deadline) and releases the lease. It returns
// ErrUnavailable, wrapped, when no process serves or the process died
// during the call; other errors are fn's, gRPC status intact.
func Call[T any](ctx context.Context, p *Plugin, fn func(ctx context.Context, conn *grpc.ClientConn) (T, error)) (T, error) {
	var zero T
	lease, err := p.Acquire(ctx)
	if err != nil {
		return zero, err
	}
	defer lease.Release()
	callCtx, cancel := withCallTimeout(ctx, p.host.opts.CallTimeout)
	defer cancel()
	out, err := fn(callCtx, lease.Conn)
	if err == nil {
		return out, nil
	}
	if ctx.Err() == nil && p.host.lostDuring(lease.process, err) {
		return zero, fmt.Errorf("%w: plugin %s/%s (pid %d) was lost during the call: %w",
			ErrUnavailable, p.kind, lease.process.spec.Name, lease.process.pid, err)
	}
	return zero, err
}

// withCallTimeout bounds ctx by timeout unless it ends earlier anyway.
func withCallTimeout(ctx context.Context, timeout time.Duration) (context.Context, context.CancelFunc) {
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) <= timeout {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, timeout)
}

// lostDuring says whether a call's error means the process was lost (died,
// or its connection broke) rather than that the plugin answered with an
// error. A plugin may itself answer UNAVAILABLE (retry later), so an
// UNAVAILABLE status alone proves nothing: a dead process is known from its
// exit, and a dying one from a failing health check.
func (h *Host) lostDuring(pr *process, err error) bool {
	switch status.Code(err) {
	case codes.Unavailable, codes.Canceled: // Canceled: go-plugin closed the connection of a dead process
	default:
		return false
	}
	if pr.hasExited() {
		return true
	}
	return pr.checkHealth(context.Background(), h.opts.HealthTimeout) != nil
}
