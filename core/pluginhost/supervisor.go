package pluginhost

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"time"
)

// command is a request to a slot's supervisor.
type command struct {
	op     commandOp
	ctx    context.Context
	spec   resolvedSpec // opApply
	reason string       // opStop
	reply  chan error
}

type commandOp int

const (
	// opApply makes the slot run spec: start it, or swap if spec or the
	// binary's content changed.
	opApply commandOp = iota
	// opStop stops the slot for good.
	opStop
)

// supervisor owns a slot's processes. It runs in one goroutine per slot, so
// every lifecycle decision about the slot is taken in one place, in order.
type supervisor struct {
	h        *Host
	p        *Plugin
	spec     resolvedSpec
	haveSpec bool
	proc     *process

	budget       restartBudget
	attempt      int // restarts in the current crash loop
	restartTimer *time.Timer
	retryTimer   *time.Timer // a refused slot's next try
	outageStart  time.Time
	lastExit     string
}

func (h *Host) supervise(p *Plugin) {
	defer close(p.stopped)
	s := &supervisor{h: h, p: p, budget: restartBudget{limit: h.opts.RestartBudget, window: h.opts.RestartWindow}}
	for {
		var exited <-chan struct{}
		if s.proc != nil {
			exited = s.proc.exited
		}
		var restartDue, retryDue <-chan time.Time
		if s.restartTimer != nil {
			restartDue = s.restartTimer.C
		}
		if s.retryTimer != nil {
			retryDue = s.retryTimer.C
		}
		select {
		case <-exited:
			s.onExit()
		case <-restartDue:
			s.restartTimer = nil
			s.restart()
		case <-retryDue:
			s.retryTimer = nil
			s.startAfresh("retried after a refusal")
		case <-p.binaryChanged:
			s.onBinaryChanged()
		case cmd := <-p.commands:
			switch cmd.op {
			case opApply:
				ctx, cancel := s.h.launchContext(cmd.ctx)
				err := s.apply(ctx, cmd.spec)
				notApplied := err
				if s.proc == nil {
					notApplied = nil // nothing serves: the slot's state tells
				}
				s.p.setApplied(notApplied)
				cmd.reply <- err
				cancel()
			case opStop:
				s.stop(cmd.ctx, cmd.reason)
				cmd.reply <- nil
				return
			}
		}
	}
}

// apply makes the slot run spec.
func (s *supervisor) apply(ctx context.Context, spec resolvedSpec) error {
	if s.proc == nil {
		return s.start(ctx, spec, "configured")
	}
	changed := specDiff(s.spec, spec)
	if len(changed) == 0 {
		_, same, err := s.sameBinary(spec)
		if err != nil {
			err = fmt.Errorf("plugin %s: pid %d keeps serving, but its binary would be refused now: %w", spec, s.proc.pid, err)
			s.p.setLastError(err)
			return err
		}
		if same {
			return nil
		}
		changed = []string{"binary content"}
	}
	return s.swap(ctx, spec, "changed: "+strings.Join(changed, ", "))
}

// start launches spec on a slot without a serving process, with a fresh
// restart budget: the operator acted.
func (s *supervisor) start(ctx context.Context, spec resolvedSpec, reason string) error {
	s.cancelRestart()
	s.budget.reset()
	s.attempt = 0
	s.spec, s.haveSpec = spec, true
	s.p.setSpec(spec)
	s.p.setState(Starting, nil)
	begin := time.Now()
	pr, err := s.h.launch(ctx, spec, launchServe)
	if err != nil {
		s.fail(err)
		return err
	}
	s.serve(pr, startedToServe)
	s.h.emit(Event{Type: EventStarted, Kind: spec.Kind, Name: spec.Name, PID: pr.pid, Reason: reason, Duration: time.Since(begin)})
	s.h.log.Info("plugin serving", "plugin", spec.String(), "pid", pr.pid, "version", pr.identity.PluginVersion, "api", pr.apiVersion)
	return nil
}

// startAfresh starts the slot's spec again on a slot without a serving
// process (a failed or restarting one); a failure is start's to report,
// and a new refusal arms the next retry.
func (s *supervisor) startAfresh(reason string) {
	ctx, cancel := s.h.launchContext(context.Background())
	defer cancel()
	_ = s.start(ctx, s.spec, reason)
}

// serve makes pr the slot's serving process and watches its health.
func (s *supervisor) serve(pr *process, cause servingCause) {
	s.proc = pr
	s.p.setServing(pr, cause)
	h := s.h
	go pr.watchHealth(h.opts.HealthInterval, h.opts.HealthTimeout, h.opts.HealthFailures, func(err error, sinceHealthy time.Duration) {
		reason := "hung: " + err.Error()
		h.emit(Event{Type: EventHung, Kind: pr.spec.Kind, Name: pr.spec.Name, PID: pr.pid, Reason: reason, Duration: sinceHealthy})
		h.log.Error("plugin hung; killing its process group", "plugin", pr.spec.String(), "pid", pr.pid, "error", err)
		if err := pr.kill(reason); err != nil {
			h.log.Error("cannot kill hung plugin", "plugin", pr.spec.String(), "pid", pr.pid, "error", err)
		}
	})
}

// onExit handles the unasked exit of the serving process.
func (s *supervisor) onExit() {
	pr := s.proc
	s.proc = nil
	s.lastExit = pr.exitReason()
	ran := time.Since(pr.started)
	s.p.setState(Restarting, fmt.Errorf("pid %d: %s", pr.pid, s.lastExit))
	s.h.emit(Event{Type: EventExited, Kind: pr.spec.Kind, Name: pr.spec.Name, PID: pr.pid, Reason: s.lastExit, Duration: ran})
	s.h.log.Warn("plugin exited", "plugin", pr.spec.String(), "pid", pr.pid, "reason", s.lastExit, "ran", ran)
	pr.closeDone()
	// The process is gone: Kill only releases go-plugin's resources, once
	// the process's pipes close (a descendant that left its group could
	// hold them), so it must not hold up the restart.
	go pr.client.Kill()
	if ran >= s.h.opts.RestartBackoffMax {
		s.attempt = 0 // it ran long enough: a new crash is not part of a loop
	}
	s.outageStart = time.Now()
	s.scheduleRestart()
}

// scheduleRestart restarts now or after the backoff, or gives up when the
// budget is spent.
func (s *supervisor) scheduleRestart() {
	if !s.budget.allow(time.Now()) {
		s.fail(fmt.Errorf("more than %d restarts within %s; left failed until its config or binary changes; last failure: %s",
			s.h.opts.RestartBudget, s.h.opts.RestartWindow, s.lastExit))
		return
	}
	delay := restartDelay(s.attempt, s.h.opts.RestartBackoff, s.h.opts.RestartBackoffMax, rand.Float64()*2-1)
	s.attempt++
	if delay == 0 {
		s.restart()
		return
	}
	s.h.log.Info("plugin restarts after backoff", "plugin", s.spec.String(), "delay", delay)
	s.restartTimer = time.NewTimer(delay)
}

func (s *supervisor) restart() {
	pr, err := s.h.launch(s.h.ctx, s.spec, launchServe)
	if err != nil && s.h.ctx.Err() != nil {
		return // the host is closing: the stop command follows
	}
	if isBinaryRefusal(err) {
		s.fail(err) // the same refusal would follow at once: see binaryRefusal
		return
	}
	if err != nil {
		s.lastExit = err.Error()
		s.p.setLastError(err)
		s.h.log.Error("plugin restart failed", "plugin", s.spec.String(), "error", err)
		s.scheduleRestart()
		return
	}
	s.serve(pr, restartedToServe)
	s.h.emit(Event{Type: EventRestarted, Kind: s.spec.Kind, Name: s.spec.Name, PID: pr.pid, Reason: s.lastExit, Duration: time.Since(s.outageStart)})
	s.h.log.Info("plugin restarted", "plugin", s.spec.String(), "pid", pr.pid, "outage", time.Since(s.outageStart))
}

// fail leaves the slot Failed until the operator acts or, for a refused
// binary, until retryRefusedLater's retry.
func (s *supervisor) fail(err error) {
	s.cancelRestart()
	s.p.setState(Failed, err)
	s.h.emit(Event{Type: EventFailed, Kind: s.spec.Kind, Name: s.spec.Name, Reason: err.Error()})
	s.h.log.Error("PLUGIN FAILED: its kind falls back until the config or the binary changes",
		"plugin", s.spec.String(), "fallback", s.spec.Kind.Fallback(), "error", err)
	s.retryRefusedLater(err)
}

// swap replaces the serving process by one running spec, and keeps the old
// one if the new one cannot start.
func (s *supervisor) swap(ctx context.Context, spec resolvedSpec, reason string) error {
	old := s.proc
	begin := time.Now()
	pr, err := s.h.launch(ctx, spec, launchServe)
	if err != nil {
		err = fmt.Errorf("%w; pid %d keeps serving", err, old.pid)
		s.p.setLastError(err)
		s.h.emit(Event{Type: EventSwapFailed, Kind: spec.Kind, Name: spec.Name, PID: old.pid, Reason: err.Error(), Duration: time.Since(begin)})
		s.h.log.Error("plugin swap failed", "plugin", spec.String(), "reason", reason, "error", err)
		return err
	}
	s.spec = spec
	s.budget.reset()
	s.attempt = 0
	s.serve(pr, swappedToServe)
	s.h.emit(Event{Type: EventSwapped, Kind: spec.Kind, Name: spec.Name, PID: pr.pid, Reason: reason, Duration: time.Since(begin)})
	s.h.log.Info("plugin swapped", "plugin", spec.String(), "reason", reason, "old_pid", old.pid, "pid", pr.pid,
		"version", pr.identity.PluginVersion)
	s.h.retireInBackground(old)
	return nil
}

// onBinaryChanged swaps when the slot's binary has new content, and gives a
// failed or restarting slot a fresh start.
func (s *supervisor) onBinaryChanged() {
	if !s.haveSpec {
		return
	}
	if s.proc == nil {
		s.startAfresh("binary changed")
		return
	}
	digest, same, err := s.sameBinary(s.spec)
	if err != nil {
		err = fmt.Errorf("plugin %s: the new binary is refused; pid %d keeps serving: %w", s.spec, s.proc.pid, err)
		s.p.setLastError(err)
		s.h.emit(Event{Type: EventSwapFailed, Kind: s.spec.Kind, Name: s.spec.Name, PID: s.proc.pid, Reason: err.Error()})
		s.h.log.Error("plugin binary changed but is refused", "plugin", s.spec.String(), "error", err)
		return
	}
	if same {
		return
	}
	ctx, cancel := s.h.launchContext(context.Background())
	defer cancel()
	_ = s.swap(ctx, s.spec, "binary changed: sha256 "+digest) // swap reports its own failure
}

// sameBinary checks spec's binary in the plugin directory and says whether
// it has the content the serving process runs. err is about the file in the
// directory; if the running content cannot be hashed (the process is going),
// the binary counts as changed.
func (s *supervisor) sameBinary(spec resolvedSpec) (digest string, same bool, err error) {
	digest, err = s.h.binaryDigest(spec)
	if err != nil {
		return "", false, err
	}
	running, runningErr := s.proc.runningDigest()
	return digest, runningErr == nil && running == digest, nil
}

// stop ends the slot: drain, Shutdown, stop.
func (s *supervisor) stop(ctx context.Context, reason string) {
	s.cancelRestart()
	pr := s.proc
	s.proc = nil
	s.p.setState(Stopped, nil)
	if pr == nil {
		return
	}
	if !pr.retire(s.h.opts.DrainTimeout, ctx.Done()) {
		s.h.log.Warn("plugin still had calls in flight when stopped", "plugin", pr.spec.String(), "pid", pr.pid)
	}
	pr.stop(ctx)
	s.h.emit(Event{Type: EventStopped, Kind: pr.spec.Kind, Name: pr.spec.Name, PID: pr.pid, Reason: reason, Duration: time.Since(pr.started)})
	s.h.log.Info("plugin stopped", "plugin", pr.spec.String(), "pid", pr.pid, "reason", reason)
}

func (s *supervisor) cancelRestart() {
	if s.restartTimer != nil {
		s.restartTimer.Stop()
		s.restartTimer = nil
	}
	if s.retryTimer != nil {
		s.retryTimer.Stop()
		s.retryTimer = nil
	}
}
