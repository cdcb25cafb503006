package eviction

import (
	"context"
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/cluster/events"
	"github.com/microlet/microlet/core/kinds/stats"
	"github.com/microlet/microlet/core/pods/podview"
	"github.com/microlet/microlet/core/pods/status"
	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// minGracePeriodSeconds is the shortest grace an evicted pod gets: upstream's
// immediateEvictionGracePeriodSeconds, what the kubelet gives for a hard
// threshold. A soft eviction with a grace of 0 (evictionMaxPodGracePeriod's
// default) gets it too. The runtime manager still gives each container at
// least 2 s to stop (upstream minimumGracePeriodInSeconds).
const minGracePeriodSeconds = 1

// evict acts on a strategy's evictions, most urgent first, keeping the
// core's say: at most MaxPodsPerCycle pods, only active pods, never a
// critical one. The chosen pods are killed together; the cycle then waits
// for their cleanup.
func (m *Manager) evict(ctx context.Context, ans answer, pods map[string]*v1.Pod, sample *stats.Sample) {
	var chosen []*v1.Pod
	var decisions []*evictionv1.Eviction
	for _, e := range ans.resp.GetEvictions() {
		if len(chosen) == m.opts.MaxPodsPerCycle {
			break
		}
		pod := pods[e.GetPodUid()]
		switch {
		case pod == nil:
			m.log.Warn("the eviction strategy named a pod that is not active; ignored", "strategy", ans.strategy, "uid", e.GetPodUid())
			continue
		case podview.IsCritical(pod):
			m.log.Warn("the eviction strategy named a critical pod; critical pods are never evicted", "strategy", ans.strategy, "pod", podName(pod))
			continue
		}
		chosen = append(chosen, pod)
		decisions = append(decisions, e)
	}

	var evicted []*v1.Pod
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, pod := range chosen {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if m.kill(pod, decisions[i], ans.strategy, usageOf(sample, pod)) {
				mu.Lock()
				evicted = append(evicted, pod)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	m.waitForCleanup(ctx, evicted)
}

// kill evicts one pod through the sync loop: Failed, reason Evicted, the
// strategy's message and a DisruptionTarget condition (upstream evictPod).
func (m *Manager) kill(pod *v1.Pod, e *evictionv1.Eviction, strategy string, usage []any) bool {
	grace := max(e.GetGracePeriodSeconds(), minGracePeriodSeconds)
	message := e.GetMessage()
	if message == "" {
		message = fmt.Sprintf("The node was low on resource: %s. ", e.GetSignal())
	}
	args := append([]any{"pod", podName(pod), "uid", pod.UID, "signal", e.GetSignal(), "strategy", strategy,
		"grace_period", grace, "message", message}, usage...)
	for k, v := range e.GetAnnotations() {
		args = append(args, k, v)
	}
	m.log.Warn("evicting pod", args...)
	m.opts.Events.AnnotatedEventf(pod, e.GetAnnotations(), v1.EventTypeWarning, events.Evicted, "%s", message)
	if err := m.opts.Pods.KillPod(pod, true, &grace, status.EvictedStatusFunc(pod, message)); err != nil {
		m.log.Error("eviction of pod failed", "pod", podName(pod), "uid", pod.UID, "error", err)
		return false
	}
	m.metrics.evictions.WithLabelValues(e.GetSignal()).Inc()
	return true
}

// waitForCleanup waits until the evicted pods' resources are released, or
// podCleanupTimeout passes (upstream waitForPodsCleanup).
func (m *Manager) waitForCleanup(ctx context.Context, pods []*v1.Pod) {
	if len(pods) == 0 {
		return
	}
	timeout := m.opts.Clock.NewTimer(podCleanupTimeout)
	defer timeout.Stop()
	poll := m.opts.Clock.NewTicker(podCleanupPollFreq)
	defer poll.Stop()
	for {
		pending := 0
		for _, pod := range pods {
			if !m.opts.Pods.PodCleanedUp(pod.UID) {
				pending++
			}
		}
		if pending == 0 {
			return
		}
		select {
		case <-ctx.Done():
			return
		case <-timeout.C():
			m.log.Warn("timed out waiting for evicted pods to be cleaned up", "pending", pending, "timeout", podCleanupTimeout)
			return
		case <-poll.C():
		}
	}
}

// usageOf is what the pod used in the sample, for the eviction's log line.
func usageOf(sample *stats.Sample, pod *v1.Pod) []any {
	var ps *typesv1.PodStats
	for _, s := range sample.Pods {
		if s.GetPodRef().GetUid() == string(pod.UID) {
			ps = s
		}
	}
	if ps == nil {
		return []any{"usage", "unknown (no stats)"}
	}
	var out []any
	if mem := ps.GetMemory(); mem != nil && mem.WorkingSetBytes != nil {
		out = append(out, "memory_working_set_bytes", mem.GetWorkingSetBytes())
	}
	if fs := ps.GetEphemeralStorage(); fs != nil && fs.UsedBytes != nil {
		out = append(out, "ephemeral_storage_used_bytes", fs.GetUsedBytes())
	}
	if p := ps.GetProcessStats(); p != nil && p.ProcessCount != nil {
		out = append(out, "process_count", p.GetProcessCount())
	}
	return out
}

func podName(pod *v1.Pod) string { return pod.Namespace + "/" + pod.Name }
