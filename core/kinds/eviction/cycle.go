package eviction

import (
	"context"
	"fmt"

	"google.golang.org/protobuf/types/known/timestamppb"
	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/kinds/stats"
	"github.com/microlet/microlet/core/node/memnotify"
	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// cycle is one eviction cycle (upstream managerImpl.synchronize): observe,
// decide, reclaim and decide again if asked, then evict and wait for the
// evicted pods' cleanup.
func (m *Manager) cycle(ctx context.Context, trigger evictionv1.Trigger) {
	active := m.opts.Pods.ActivePods()
	pods := make(map[string]*v1.Pod, len(active))
	views := make([]*typesv1.Pod, 0, len(active))
	for _, pod := range active {
		pods[string(pod.UID)] = pod
		views = append(views, m.opts.Pods.PodView(pod))
	}

	req, sample, err := m.request(ctx, trigger, views)
	if err != nil {
		m.logFailure(ctx, "eviction cycle skipped: the node could not be measured", err)
		return
	}
	ans, err := m.synchronize(ctx, req)
	if err != nil {
		m.logFailure(ctx, "eviction cycle skipped: no decision", err)
		return
	}
	m.metrics.cycles.WithLabelValues(ans.strategy, triggerLabel(trigger)).Inc()
	m.recordThresholdMet(ans.resp)

	if reclaim := ans.resp.GetReclaim(); len(reclaim) > 0 {
		reclaimed := m.reclaim(ctx, reclaim)
		if req, sample, err = m.request(ctx, trigger, views); err != nil {
			m.logFailure(ctx, "eviction cycle ends after reclaim: the node could not be measured again", err)
			return
		}
		req.Reclaimed = reclaimed
		if ans, err = m.synchronize(ctx, req); err != nil {
			m.logFailure(ctx, "eviction cycle ends after reclaim: no decision", err)
			return
		}
	}
	m.armNotifications(ans.resp.GetMemoryNotifications())
	m.mu.Lock()
	m.pressureLevels = ans.resp.GetPressureNotifications()
	m.mu.Unlock()
	m.evict(ctx, ans, pods, sample)
}

// request builds a SynchronizeRequest on fresh stats: the stats plugin's,
// or, while it does not serve, the core's own measurement.
func (m *Manager) request(ctx context.Context, trigger evictionv1.Trigger, views []*typesv1.Pod) (*evictionv1.SynchronizeRequest, *stats.Sample, error) {
	sample, err := m.opts.Stats.Sample(ctx, true)
	if ctx.Err() != nil {
		return nil, nil, ctx.Err()
	}
	if m.opts.Measurer != nil {
		m.mu.Lock()
		m.logChange(&m.localStats, reason(err), "the stats plugin does not answer: eviction measures memory and disk itself",
			"the stats plugin answers again; eviction decides on its stats")
		m.mu.Unlock()
		if err != nil {
			sample, err = m.opts.Measurer.Sample(ctx, views)
		} else {
			// The stats plugin lists a pod once the core's runtime cache
			// shows a running container, up to a PLEG relist after it
			// started: a pod that fills its memory at once would go unseen.
			m.opts.Measurer.AddMissingPods(sample, views)
		}
	}
	if err != nil {
		return nil, nil, err
	}
	if m.opts.Pressure != nil {
		m.opts.Pressure.addPressure(sample, views)
	}
	req := &evictionv1.SynchronizeRequest{
		Now:       timestamppb.New(m.opts.Clock.Now()),
		Trigger:   trigger,
		Node:      m.opts.Node(),
		NodeStats: sample.Node,
		Pods:      views,
		PodStats:  sample.Pods,
	}
	if m.opts.Measurer != nil {
		dedicated, err := m.opts.Measurer.DedicatedImageFs(ctx)
		if err != nil {
			m.log.Debug("cannot tell whether images have a filesystem of their own; assuming not", "error", err)
		}
		req.DedicatedImageFs = dedicated
	}
	return req, sample, nil
}

// reclaim runs the node-level reclaim a strategy asked for, in its order
// (upstream reclaimNodeLevelResources), and reports each result.
func (m *Manager) reclaim(ctx context.Context, requests []*evictionv1.ReclaimRequest) []*evictionv1.ReclaimResult {
	var results []*evictionv1.ReclaimResult
	for _, r := range requests {
		result := &evictionv1.ReclaimResult{Kind: r.GetKind()}
		var err error
		switch r.GetKind() {
		case evictionv1.ReclaimKind_RECLAIM_KIND_CONTAINER_GC:
			err = m.opts.Reclaimer.CollectContainers(ctx, true)
		case evictionv1.ReclaimKind_RECLAIM_KIND_IMAGE_GC:
			result.BytesFreed, err = m.opts.Reclaimer.CollectImages(ctx, r.GetBytesToFree())
		default:
			err = fmt.Errorf("unknown reclaim kind %v", r.GetKind())
		}
		if err != nil {
			result.Error = err.Error()
		}
		m.log.Info("node-level reclaim", "signal", r.GetSignal(), "kind", r.GetKind().String(), "bytes_freed", result.BytesFreed, "error", result.Error)
		results = append(results, result)
	}
	return results
}

// armNotifications arms the kernel notifications the strategy asked for.
func (m *Manager) armNotifications(asked []*evictionv1.MemoryNotification) {
	if m.opts.Notifier == nil {
		return
	}
	thresholds := make([]memnotify.Threshold, 0, len(asked))
	for _, n := range asked {
		thresholds = append(thresholds, memnotify.Threshold{Cgroup: n.GetCgroup(), UsageBytes: n.GetUsageBytes()})
	}
	if err := m.opts.Notifier.Arm(thresholds); err != nil {
		m.log.Warn("some memory notifications could not be armed; the periodic cycle still runs", "error", err)
	}
}

// logFailure logs why a cycle stopped, unless the manager is stopping.
func (m *Manager) logFailure(ctx context.Context, what string, err error) {
	if ctx.Err() == nil {
		m.log.Error(what, "error", err)
	}
}

func triggerLabel(t evictionv1.Trigger) string {
	switch t {
	case evictionv1.Trigger_TRIGGER_MEMORY_NOTIFICATION:
		return "memory_notification"
	case evictionv1.Trigger_TRIGGER_MEMORY_PRESSURE:
		return "memory_pressure"
	}
	return "periodic"
}
