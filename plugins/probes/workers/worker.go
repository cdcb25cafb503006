package workers

import (
	"context"
	"math/rand/v2"
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	"github.com/microlet/microlet/plugins/probes/decide"
	"github.com/microlet/microlet/plugins/probes/handler"
	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
	"github.com/microlet/microlet/sdk"
)

// worker probes one probe of one container on its period, as upstream's
// worker.run: a jittered first run after a plugin (re)start, then one
// attempt per period.
type worker struct {
	key    resultKey
	probe  *probesv1.Probe
	runner *handler.Runner
	cancel context.CancelFunc
	done   chan struct{}
}

// startWorker starts a worker; the plugin's mutex is held.
func startWorker(p *Plugin, c *container, kind probesv1.ProbeType, probe *probesv1.Probe) *worker {
	ctx, cancel := context.WithCancel(context.Background())
	w := &worker{
		key:    resultKey{containerID: c.target.ContainerID, kind: kind},
		probe:  probe,
		runner: p.runner,
		cancel: cancel,
		done:   make(chan struct{}),
	}
	go func() {
		defer close(w.done)
		w.run(ctx, p, c)
	}()
	return w
}

// stop ends the worker, waits for it, and forgets its standing verdict.
func (w *worker) stop(p *Plugin) {
	w.cancel()
	<-w.done
	p.results.forget(w.key)
}

func (w *worker) run(ctx context.Context, p *Plugin, c *container) {
	// The first attempt waits a random part of the period when the plugin
	// has just (re)started and been handed every container at once.
	period := decide.Period(w.probe)
	first := time.NewTimer(decide.FirstRunDelay(period, time.Since(p.startedAt), rand.Float64()))
	select {
	case <-ctx.Done():
		first.Stop()
		return
	case <-first.C:
	}
	ticker := time.NewTicker(period)
	defer ticker.Stop()

	state := decide.NewWorker(w.key.kind, w.probe)
	// A readiness probe held back by the startup probe runs as soon as
	// the container has started, not a period later: upstream's status
	// manager triggers it the same way.
	var startedNow <-chan struct{}
	if w.key.kind == probesv1.ProbeType_PROBE_TYPE_READINESS {
		startedNow = c.started
	}
	for {
		if w.attempt(ctx, p, c, state) {
			startedNow = nil
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
		case <-startedNow:
			startedNow = nil
			ticker.Reset(period)
		}
	}
}

// attempt probes once if the worker's state says so, reports the result,
// and says whether the container had started when it looked.
func (w *worker) attempt(ctx context.Context, p *Plugin, c *container, state *decide.Worker) bool {
	started := c.isStarted()
	if !state.ShouldProbe(time.Now(), c.startedAt, started) {
		return started
	}
	begin := time.Now()
	out := w.runner.Run(ctx, w.probe, c.target)
	elapsed := time.Since(begin)
	if ctx.Err() != nil {
		return started // the worker was stopped: the attempt is moot
	}
	settled := state.Record(out.Result)
	kind := w.key.kind
	r := &probesv1.ProbeResult{
		PodUid:        c.identity.GetPodUid(),
		ContainerName: c.identity.GetContainerName(),
		ContainerId:   c.target.ContainerID,
		ProbeType:     kind,
		Result:        settled,
		Attempt:       out.Result,
		Message:       out.Output,
		Warning:       out.Warning,
		Time:          timestamppb.New(begin),
		Duration:      durationpb.New(elapsed),
	}
	if settled == probesv1.Result_RESULT_FAILURE && kind != probesv1.ProbeType_PROBE_TYPE_READINESS {
		r.TerminationGracePeriodSeconds = w.probe.TerminationGracePeriodSeconds
	}
	w.log(c, out.Result, out.Output, out.Warning)
	p.results.publish(ctx, r)
	if kind == probesv1.ProbeType_PROBE_TYPE_STARTUP && settled == probesv1.Result_RESULT_SUCCESS {
		// After the result is out: the readiness and liveness results
		// this releases must not reach the core before it.
		c.markStarted()
	}
	return started
}

func (w *worker) log(c *container, attempt probesv1.Result, output string, warning bool) {
	fields := []any{"probe", decide.TypeName(w.key.kind), "pod", c.identity.GetPodNamespace() + "/" + c.identity.GetPodName(),
		"container", c.identity.GetContainerName(), "container_id", c.target.ContainerID, "output", output}
	switch {
	case warning:
		sdk.Log().Warn("probe succeeded with a warning", fields...)
	case attempt == probesv1.Result_RESULT_FAILURE:
		sdk.Log().Debug("probe failed", fields...)
	case attempt == probesv1.Result_RESULT_UNKNOWN:
		sdk.Log().Debug("probe errored", fields...)
	default:
		sdk.Log().Trace("probe succeeded", fields...)
	}
}
