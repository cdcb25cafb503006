// Package psi is an eviction strategy that takes a second opinion from
// pressure stall information (PSI): besides the kubelet's signals and
// thresholds, which it applies as the kubelet strategy does, it evicts when
// the time tasks spend waiting for memory crosses a level, on the node
// (/proc/pressure/memory) or in a pod (its cgroup's memory.pressure). A
// signal of free memory says how much is left; PSI says what the shortage
// already costs, and rises while the page cache the workloads need is being
// thrown out, before the kernel's OOM killer, and while the working set
// the kubelet counts still looks small. The victim is the kubelet's:
// ranked for memory (pods over their request first, then lower priority,
// then usage beyond the request).
package psi

import (
	"encoding/json"
	"fmt"
	"time"

	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk/evictionengine"
	"github.com/microlet/microlet/sdk/evictionengine/kubelet"
)

// Signal is the eviction signal of an eviction for memory pressure stalls,
// as kubelet_evictions labels it and the log names it.
const Signal = "memory.pressure"

// immediateGracePeriodSeconds is what the kubelet gives a pod evicted for a
// hard threshold: a stall past its level is one.
const immediateGracePeriodSeconds = 1

// Strategy is the kubelet strategy's engine plus the pressure levels.
type Strategy struct {
	*evictionengine.Engine
	node, pods []Level
}

// New builds the strategy from a validated config.
func New(cfg *Config) (*Strategy, error) {
	node, pods, err := cfg.levels()
	if err != nil {
		return nil, err
	}
	e, err := kubelet.New(&cfg.Config)
	if err != nil {
		return nil, err
	}
	return &Strategy{Engine: e, node: node, pods: pods}, nil
}

// Synchronize decides as the kubelet strategy; when that evicts nobody and
// asks for no reclaim, a stall past a level evicts the kubelet's first
// choice for memory. Every answer asks the core to start a cycle as soon as
// a level is reached.
func (s *Strategy) Synchronize(req *evictionv1.SynchronizeRequest) (evictionengine.Result, error) {
	st, warning := decodeState(req.GetState())
	req.State = st.Engine
	res, err := s.Engine.Synchronize(req)
	if err != nil {
		return res, err
	}
	if warning != "" {
		res.Warnings = append(res.Warnings, warning)
	}
	resp := res.Response
	resp.PressureNotifications = s.notifications(req)
	if len(resp.GetEvictions()) == 0 && len(resp.GetReclaim()) == 0 {
		now := req.GetNow().AsTime()
		if stall := s.stalled(req, st.Last, now); stall != "" {
			resp.Evictions = evictions(req, stall)
			st.Last = record(req, now)
		}
	}
	st.Engine = resp.GetState()
	if resp.State, err = json.Marshal(st); err != nil {
		return evictionengine.Result{}, err
	}
	return res, nil
}

// notifications ask the core to poll every level: the node's, and the
// pods' for the pods whose stalls count (not those with limits of their
// own).
func (s *Strategy) notifications(req *evictionv1.SynchronizeRequest) []*evictionv1.PressureNotification {
	var out []*evictionv1.PressureNotification
	for _, l := range s.node {
		out = append(out, &evictionv1.PressureNotification{Line: l.Line, WindowSeconds: l.Window, Percent: l.Percent})
	}
	if len(s.pods) == 0 {
		return out
	}
	var uids []string
	for _, pod := range req.GetPods() {
		if !selfLimited(pod) {
			uids = append(uids, pod.GetUid())
		}
	}
	for _, l := range s.pods {
		out = append(out, &evictionv1.PressureNotification{Pods: true, Line: l.Line, WindowSeconds: l.Window, Percent: l.Percent, PodUids: uids})
	}
	return out
}

// stalled describes the first level the node's or a pod's memory pressure
// is above, for the eviction message; "" when none is.
//
// Averages fall slowly once the cause is gone: avg10 keeps over a third of
// a stall 10 s later. Within a level's window after the last eviction, the
// stall must therefore also have run above the level since that eviction
// (by the totals), lest one stall evict a pod per cycle.
func (s *Strategy) stalled(req *evictionv1.SynchronizeRequest, last *lastEviction, now time.Time) string {
	nodePSI := req.GetNodeStats().GetMemory().GetPsi()
	for _, l := range s.node {
		var since uint64
		if last != nil {
			since = last.Node[l.Line]
		}
		if v, ok := above(nodePSI, l, last, since, now); ok {
			return fmt.Sprintf("node memory pressure %s %.2f%% is above %g%%", levelName(l), v, l.Percent)
		}
	}
	pods := map[string]*typesv1.Pod{}
	for _, p := range req.GetPods() {
		pods[p.GetUid()] = p
	}
	for _, l := range s.pods {
		for _, ps := range req.GetPodStats() {
			pod := pods[ps.GetPodRef().GetUid()]
			if pod == nil || selfLimited(pod) {
				continue
			}
			var since uint64
			if last != nil {
				since = last.Pods[pod.GetUid()][l.Line]
			}
			if v, ok := above(ps.GetMemory().GetPsi(), l, last, since, now); ok {
				return fmt.Sprintf("pod %s/%s memory pressure %s %.2f%% is above %g%%", pod.GetNamespace(), pod.GetName(), levelName(l), v, l.Percent)
			}
		}
	}
	return ""
}

// above reports whether psi's average for l is above its level, and, within
// the level's window after the last eviction, whether the stall since then
// (total now less since, in µs) also is. It returns the average.
func above(psi *typesv1.PSIStats, l Level, last *lastEviction, since uint64, now time.Time) (float64, bool) {
	line := psi.GetSome()
	if l.Line == "full" {
		line = psi.GetFull()
	}
	if line == nil {
		return 0, false
	}
	v := map[uint32]float64{10: line.GetAvg10(), 60: line.GetAvg60(), 300: line.GetAvg300()}[l.Window]
	if v <= l.Percent {
		return v, false
	}
	if last == nil {
		return v, true
	}
	elapsed := now.Sub(last.At)
	if elapsed >= time.Duration(l.Window)*time.Second {
		return v, true
	}
	if elapsed <= 0 || line.GetTotal() < since {
		return v, false
	}
	stalled := time.Duration(line.GetTotal()-since) * time.Microsecond
	return v, float64(stalled)/float64(elapsed)*100 > l.Percent
}

// selfLimited is a pod whose every container has a memory limit, or that
// has a pod-level one: it may stall against its own limit, which no
// eviction of another pod relieves, so its stalls are not the node's.
func selfLimited(pod *typesv1.Pod) bool {
	if hasMemory(pod.GetPodResources().GetLimits()) {
		return true
	}
	containers := pod.GetContainers()
	if len(containers) == 0 {
		return false
	}
	for _, c := range containers {
		if !hasMemory(c.GetResources().GetLimits()) {
			return false
		}
	}
	return true
}

func hasMemory(l *typesv1.ResourceList) bool { return l != nil && l.MemoryBytes != nil }

// evictions rank every evictable pod as the kubelet does for memory, most
// urgent first; the core evicts as many as its limit allows.
func evictions(req *evictionv1.SynchronizeRequest, stall string) []*evictionv1.Eviction {
	candidates := evictionengine.MemoryCandidates(req)
	kubelet.Policy{}.Rank(evictionengine.ResourceMemory, req.GetNow().AsTime(), candidates)
	out := make([]*evictionv1.Eviction, 0, len(candidates))
	for _, c := range candidates {
		msg := fmt.Sprintf("The node was low on resource: memory. %s. ", capitalize(stall))
		annotations := map[string]string{"starved_resource": "memory"}
		if c.HasStats {
			msg += fmt.Sprintf("Pod %s was using %d bytes of memory, request is %d. ", c.Pod.GetName(), c.Usage, c.Request)
			annotations["offending_pod"] = c.Pod.GetName()
			annotations["offending_pod_usage"] = fmt.Sprint(c.Usage)
		}
		out = append(out, &evictionv1.Eviction{
			PodUid:             c.Pod.GetUid(),
			GracePeriodSeconds: immediateGracePeriodSeconds,
			Signal:             Signal,
			Message:            msg,
			Annotations:        annotations,
		})
	}
	return out
}

func levelName(l Level) string { return fmt.Sprintf("%s avg%d", l.Line, l.Window) }

func capitalize(s string) string {
	if s == "" || s[0] < 'a' || s[0] > 'z' {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}
