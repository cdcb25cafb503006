package pluginhost

import (
	"context"
	"errors"
	"time"
)

const (
	// followRetryMin and followRetryMax bound the wait before a followed
	// slot is asked again; the wait doubles while sessions fail before
	// getting anywhere.
	followRetryMin = 100 * time.Millisecond
	followRetryMax = 2 * time.Second
)

// ErrRetired ends a followed session whose process is being retired (a hot
// swap) or has died: the next session starts at once on the process then
// serving.
var ErrRetired = errors.New("the plugin process was retired")

// Session serves one plugin process until it fails or ctx ends; ctx ends
// with cause ErrRetired when the process is retired. progressed says
// whether it got far enough that the next failure starts a fresh backoff.
type Session func(ctx context.Context, lease *Lease) (progressed bool, err error)

// Follow keeps a session open on slot's serving process until ctx ends, as
// long-lived streams need: one session per process, the next one as soon as
// a process is retired, after a backoff (100 ms doubling to 2 s) when a
// session fails or none serves. ended, if not nil, learns why each session
// ended (ErrRetired, an error wrapping ErrUnavailable when none served, or
// the session's error; a retired process's failing calls report
// ErrRetired).
func Follow(ctx context.Context, slot Slot, session Session, ended func(error)) {
	wait := followRetryMin
	for {
		lease, err := slot.Acquire(ctx)
		if err == nil {
			var progressed bool
			progressed, err = runSession(ctx, lease, session)
			lease.Release()
			if progressed {
				wait = followRetryMin
			}
		}
		if ctx.Err() != nil {
			return
		}
		if ended != nil {
			ended(err)
		}
		if errors.Is(err, ErrRetired) {
			continue
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
		wait = min(2*wait, followRetryMax)
	}
}

// runSession runs session on lease with a context that ends when the
// process is retired, and reports why it ended.
func runSession(ctx context.Context, lease *Lease, session Session) (bool, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		select {
		case <-lease.Done:
			cancel(ErrRetired)
		case <-ctx.Done():
		}
	}()
	progressed, err := session(ctx, lease)
	if cause := context.Cause(ctx); cause != nil {
		return progressed, cause
	}
	return progressed, err
}
