package pluginhost

import (
	"errors"
	"time"
)

// binaryRefusal is a launch refused before anything ran: the binary or the
// plugin directory failed the trust checks (mode, owner, type, pin) or is
// missing. Launching again at once would fail the same way, so a refused
// slot is failed at once (its kind falls back) and retried after
// RestartBackoffMax, or as soon as the watched directory or binary changes.
type binaryRefusal struct{ err error }

func (r binaryRefusal) Error() string { return r.err.Error() }
func (r binaryRefusal) Unwrap() error { return r.err }

func isBinaryRefusal(err error) bool {
	var r binaryRefusal
	return errors.As(err, &r)
}

// retryRefusedLater arms the retry of a slot failed by a refusal.
func (s *supervisor) retryRefusedLater(err error) {
	if !isBinaryRefusal(err) || s.h.ctx.Err() != nil {
		return
	}
	s.retryTimer = time.NewTimer(s.h.opts.RestartBackoffMax)
	s.h.log.Info("refused plugin is tried again when its directory or binary changes, or after a while",
		"plugin", s.spec.String(), "retry_in", s.h.opts.RestartBackoffMax.String())
}
