// Package evictionengine is the decision logic every microlet eviction
// strategy shares: it parses thresholds in the kubelet's syntax, observes
// the signals, tracks grace periods, minimum reclaim and pressure conditions
// across cycles, asks for node-level reclaim, and writes the kubelet's
// messages. The core's built-in evictor runs it too, which is why it lives
// in the SDK (the core may import sdk/, never plugins/). A strategy supplies only a Policy: how to rank pods and whom to
// admit. The package does no I/O and reads no clock; time comes in the
// request, and memory between cycles goes out in the response's state.
//
// It follows the kubelet's eviction manager (pkg/kubelet/eviction); where it
// departs from it, docs/eviction.md says so and why.
package evictionengine

import (
	"slices"
	"sync"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk"
)

// immediateEvictionGracePeriodSeconds is the grace period of pods evicted for
// a hard threshold or a broken storage limit (upstream, same name).
const immediateEvictionGracePeriodSeconds = 1

// Engine decides for one configured strategy. It is safe for concurrent use.
type Engine struct {
	thresholds               []Threshold
	maxPodGracePeriodSeconds int64
	pressureTransitionPeriod time.Duration
	policy                   Policy

	mu   sync.Mutex
	last lastSync
}

// lastSync is what Admit learns from the last Synchronize.
type lastSync struct {
	synchronized bool
	now          time.Time
	evictable    []*typesv1.Pod
}

// New builds an engine from a validated config and a strategy's policy.
func New(cfg Config, policy Policy) (*Engine, error) {
	thresholds, err := cfg.Thresholds()
	if err != nil {
		return nil, err
	}
	return &Engine{
		thresholds:               thresholds,
		maxPodGracePeriodSeconds: int64(cfg.MaxPodGracePeriod.Duration / time.Second),
		pressureTransitionPeriod: cfg.PressureTransitionPeriod.Duration,
		policy:                   policy,
	}, nil
}

// Thresholds are the configured thresholds: hard ones, then soft ones.
func (e *Engine) Thresholds() []Threshold { return slices.Clone(e.thresholds) }

// Result is a Synchronize answer.
type Result struct {
	Response *evictionv1.SynchronizeResponse
	// Warnings are problems that did not stop the decision, for the log.
	Warnings []string
}

// Synchronize makes one decision over the observations of a request (upstream
// managerImpl.synchronize). When the threshold to act on can be relieved by
// node-level reclaim, the answer asks for it and evicts nobody; the core runs
// it and asks again with `reclaimed` set and fresh stats, and only then are
// pods ranked, if the thresholds still hold.
func (e *Engine) Synchronize(req *evictionv1.SynchronizeRequest) (Result, error) {
	if !req.GetNow().IsValid() {
		return Result{}, sdk.Invalid("SynchronizeRequest.now is not set or is out of range")
	}
	now := req.GetNow().AsTime()
	var warnings []string
	prev, err := decodeState(req.GetState())
	if err != nil {
		warnings = append(warnings, err.Error())
	}

	obs := observe(req)
	next, met, actionable := e.track(prev, obs, now)
	var active []string
	active, next.ConditionLastObserved = holdConditions(conditionsOf(met), prev.ConditionLastObserved, e.pressureTransitionPeriod, now)

	evictable, stats := evictablePods(req), podStatsByUID(req)

	resp := &evictionv1.SynchronizeResponse{
		Conditions:          nodeConditions(active, req.GetNode().GetConditions(), now),
		Observations:        e.report(obs, next.FirstObserved),
		MemoryNotifications: memoryNotifications(e.thresholds, obs, req),
	}
	if resp.Evictions = localStorageEvictions(evictable, stats, req.GetDedicatedImageFs()); len(resp.Evictions) == 0 {
		resp.Reclaim, resp.Evictions = e.relieve(req, now, actionable, obs, evictable, stats)
	}
	if resp.State, err = next.encode(); err != nil {
		return Result{}, err
	}

	e.mu.Lock()
	e.last = lastSync{synchronized: true, now: now, evictable: evictable}
	e.mu.Unlock()
	return Result{Response: resp, Warnings: warnings}, nil
}

// track carries the thresholds' clocks from the previous state to the next
// one. met are the thresholds met now, grace period or not; actionable are
// those that may evict this cycle.
func (e *Engine) track(prev state, obs observations, now time.Time) (next state, met, actionable []Threshold) {
	next = state{Version: stateVersion, FirstObserved: map[string]time.Time{}, StatsTime: map[Signal]time.Time{}}

	// Thresholds met now, and those that drove eviction last cycle and have
	// not yet reclaimed their minimum (upstream thresholdsMet twice, merged).
	for _, t := range e.thresholds {
		o, ok := obs[t.Signal]
		if ok && (t.met(o, false) || (slices.Contains(prev.Met, t.key()) && t.met(o, true))) {
			met = append(met, t)
		}
	}
	for _, t := range met {
		at, seen := prev.FirstObserved[t.key()]
		if !seen {
			at = now
		}
		next.FirstObserved[t.key()] = at
	}

	// Thresholds past their grace period drive eviction, but only on stats
	// newer than those of the last cycle, lest one shortage evict twice.
	for _, t := range met {
		if now.Sub(next.FirstObserved[t.key()]) < t.GracePeriod {
			continue
		}
		next.Met = append(next.Met, t.key())
		o := obs[t.Signal]
		if last, ok := prev.StatsTime[t.Signal]; o.time.IsZero() || !ok || o.time.After(last) {
			actionable = append(actionable, t)
		}
	}
	for s, o := range obs {
		if !o.time.IsZero() {
			next.StatsTime[s] = o.time
		}
	}
	return next, met, actionable
}

// relieve picks the threshold to act on and either asks for node-level
// reclaim or ranks the pods to evict for it.
func (e *Engine) relieve(req *evictionv1.SynchronizeRequest, now time.Time, actionable []Threshold, obs observations, evictable []*typesv1.Pod, stats map[string]*typesv1.PodStats) ([]*evictionv1.ReclaimRequest, []*evictionv1.Eviction) {
	if len(actionable) == 0 {
		return nil, nil
	}
	// Memory goes first (upstream byEvictionPriority); otherwise the first
	// threshold in config order, hard before soft.
	chosen := actionable[0]
	if i := slices.IndexFunc(actionable, func(t Threshold) bool { return t.Signal.isMemory() }); i >= 0 {
		chosen = actionable[i]
	}
	dedicated := req.GetDedicatedImageFs()
	if reclaim := nodeReclaim(chosen.Signal, dedicated); len(reclaim) > 0 {
		if len(req.GetReclaimed()) == 0 {
			return reclaim, nil
		}
		// After reclaim, pods go only if some threshold still holds with its
		// minimum reclaim added (upstream reclaimNodeLevelResources).
		if !slices.ContainsFunc(e.thresholds, func(t Threshold) bool {
			o, ok := obs[t.Signal]
			return ok && t.met(o, true)
		}) {
			return nil, nil
		}
	}

	resource := chosen.Signal.Resource()
	scope := chosen.Signal.fsScope(dedicated)
	candidates := asCandidates(evictable, stats, resource, scope)
	e.policy.Rank(resource, now, candidates)

	evictions := make([]*evictionv1.Eviction, 0, len(candidates))
	for _, c := range candidates {
		msg, annotations := evictionMessage(chosen, obs[chosen.Signal], c.Pod, stats[c.Pod.GetUid()])
		evictions = append(evictions, &evictionv1.Eviction{
			PodUid:             c.Pod.GetUid(),
			GracePeriodSeconds: e.gracePeriod(chosen, c.Pod),
			Signal:             string(chosen.Signal),
			Message:            msg,
			Annotations:        annotations,
		})
	}
	return nil, evictions
}

// gracePeriod is how long an evicted pod gets to stop: 1s for a hard
// threshold; for a soft one, the pod's own termination grace period capped
// at max_pod_grace_period.
func (e *Engine) gracePeriod(t Threshold, pod *typesv1.Pod) int64 {
	if t.Hard() {
		return immediateEvictionGracePeriodSeconds
	}
	return min(e.maxPodGracePeriodSeconds, pod.GetTerminationGracePeriodSeconds())
}

// report describes every threshold whose signal was observed.
func (e *Engine) report(obs observations, firstObserved map[string]time.Time) []*evictionv1.ThresholdObservation {
	var out []*evictionv1.ThresholdObservation
	for _, t := range e.thresholds {
		o, ok := obs[t.Signal]
		if !ok {
			continue
		}
		r := &evictionv1.ThresholdObservation{
			Signal:    string(t.Signal),
			Threshold: t.Value.String(),
			Available: o.available,
			Capacity:  o.capacity,
			Hard:      t.Hard(),
			Met:       t.met(o, false),
		}
		if at, ok := firstObserved[t.key()]; ok && !t.Hard() {
			r.FirstMet = timestamppb.New(at)
		}
		out = append(out, r)
	}
	return out
}
