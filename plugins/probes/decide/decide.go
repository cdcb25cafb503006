// Package decide holds the probes plugin's decisions, free of I/O and of the
// clock (time comes in as arguments): when a probe worker probes, how
// attempts add up to a verdict through the success and failure thresholds,
// how the startup probe gates the others, and whether a container's probes
// are well formed. It follows the kubelet's pkg/kubelet/prober/worker.go
// (doProbe) and prober_manager.go.
package decide

import (
	"time"

	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
)

// Types are the probe types, in the order a container's workers start.
var Types = []probesv1.ProbeType{
	probesv1.ProbeType_PROBE_TYPE_STARTUP,
	probesv1.ProbeType_PROBE_TYPE_READINESS,
	probesv1.ProbeType_PROBE_TYPE_LIVENESS,
}

// ProbeOf returns the probe of type t in c, nil when c has none.
func ProbeOf(c *probesv1.ContainerProbes, t probesv1.ProbeType) *probesv1.Probe {
	switch t {
	case probesv1.ProbeType_PROBE_TYPE_LIVENESS:
		return c.GetLiveness()
	case probesv1.ProbeType_PROBE_TYPE_READINESS:
		return c.GetReadiness()
	case probesv1.ProbeType_PROBE_TYPE_STARTUP:
		return c.GetStartup()
	}
	return nil
}

// InitialVerdict is a probe's verdict before its thresholds are first met,
// as upstream's worker sets it when it sees a new container: readiness
// starts failed (not ready), liveness succeeded (not restarted), startup
// unknown (not started).
func InitialVerdict(t probesv1.ProbeType) probesv1.Result {
	switch t {
	case probesv1.ProbeType_PROBE_TYPE_READINESS:
		return probesv1.Result_RESULT_FAILURE
	case probesv1.ProbeType_PROBE_TYPE_LIVENESS:
		return probesv1.Result_RESULT_SUCCESS
	}
	return probesv1.Result_RESULT_UNKNOWN
}

// Worker is the state of one probe of one container instance: upstream's
// worker fields lastResult, resultRun and onHold. It is used by one
// goroutine at a time.
type Worker struct {
	kind             probesv1.ProbeType
	initialDelay     int32
	successThreshold int
	failureThreshold int

	// verdict is the standing verdict.
	verdict probesv1.Result
	// last is the outcome of the latest attempt that ran; run counts how
	// many attempts in a row had it.
	last probesv1.Result
	run  int
	// onHold stops probing for good: a failed liveness probe (the
	// container is about to be restarted, and a new instance gets new
	// workers) or a startup probe that reached a verdict.
	onHold bool
}

// NewWorker starts the state of probe p of type t.
func NewWorker(t probesv1.ProbeType, p *probesv1.Probe) *Worker {
	return &Worker{
		kind:             t,
		initialDelay:     p.GetInitialDelaySeconds(),
		successThreshold: int(p.GetSuccessThreshold()),
		failureThreshold: int(p.GetFailureThreshold()),
		verdict:          InitialVerdict(t),
	}
}

// Verdict is the standing verdict.
func (w *Worker) Verdict() probesv1.Result { return w.verdict }

// ShouldProbe says whether the worker probes at now, given when the
// container started and whether it has started in the startup probe's
// sense. As upstream: nothing runs on hold; nothing runs during
// initialDelaySeconds (whole seconds since the start, truncated); the
// startup probe runs only until the container has started, the others
// only once it has.
func (w *Worker) ShouldProbe(now, containerStartedAt time.Time, started bool) bool {
	if w.onHold {
		return false
	}
	if int32(now.Sub(containerStartedAt).Seconds()) < w.initialDelay {
		return false
	}
	if w.kind == probesv1.ProbeType_PROBE_TYPE_STARTUP {
		return !started
	}
	return started
}

// Record takes the outcome of one attempt and returns the verdict it
// settles, or RESULT_UNSPECIFIED when it settles none: the attempt could
// not run (RESULT_UNKNOWN: upstream throws such attempts away, so they
// neither count nor break a run), or its run is still below the threshold
// of its outcome. Every attempt that meets the threshold settles the
// verdict again, as upstream sets its result cache on each.
func (w *Worker) Record(attempt probesv1.Result) probesv1.Result {
	if attempt != probesv1.Result_RESULT_SUCCESS && attempt != probesv1.Result_RESULT_FAILURE {
		return probesv1.Result_RESULT_UNSPECIFIED
	}
	if attempt == w.last {
		w.run++
	} else {
		w.last, w.run = attempt, 1
	}
	threshold := w.successThreshold
	if attempt == probesv1.Result_RESULT_FAILURE {
		threshold = w.failureThreshold
	}
	if w.run < threshold {
		return probesv1.Result_RESULT_UNSPECIFIED
	}
	w.verdict = attempt
	if w.kind == probesv1.ProbeType_PROBE_TYPE_STARTUP ||
		(w.kind == probesv1.ProbeType_PROBE_TYPE_LIVENESS && attempt == probesv1.Result_RESULT_FAILURE) {
		w.onHold, w.run = true, 0
	}
	return attempt
}

// Started says whether a container has started: it has no startup probe,
// or its startup probe has succeeded.
func Started(startup *Worker) bool {
	return startup == nil || startup.verdict == probesv1.Result_RESULT_SUCCESS
}

// FirstRunDelay is how long a new worker waits before its first attempt:
// a random part (random in [0,1)) of its period when the plugin started
// less than a period ago, so that the probes of every container, set at
// once after a (re)start, do not all run together; no wait otherwise.
// Upstream does the same with the kubelet's start time.
func FirstRunDelay(period, sincePluginStart time.Duration, random float64) time.Duration {
	if period <= sincePluginStart {
		return 0
	}
	return time.Duration(random * float64(period))
}

// Period is a probe's periodSeconds as a duration.
func Period(p *probesv1.Probe) time.Duration {
	return time.Duration(p.GetPeriodSeconds()) * time.Second
}

// Timeout is a probe's timeoutSeconds as a duration.
func Timeout(p *probesv1.Probe) time.Duration {
	return time.Duration(p.GetTimeoutSeconds()) * time.Second
}
