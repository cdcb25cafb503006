// Package priority is an eviction strategy for fleets that rank workloads by
// priority class alone: a pod of lower priority always goes before one of
// higher priority, whatever either uses; within a priority the youngest pod
// goes first, so long-running pods survive churn; usage breaks what remains.
// Optionally, pods older than protect_min_age go only when no younger pod
// is left to evict.
package priority

import (
	"cmp"
	"fmt"
	"time"

	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk/evictionengine"
)

// Policy ranks by priority, then age, then usage.
type Policy struct {
	protectMinAge time.Duration
}

// New builds the strategy's evictionengine.
func New(cfg *Config) (*evictionengine.Engine, error) {
	return evictionengine.New(cfg.Config, Policy{protectMinAge: cfg.ProtectMinAge.Duration})
}

// Rank orders pods: unprotected before protected, lower priority first,
// younger first, then (as the kubelet does) pods without stats and pods using
// most beyond their request. For pids the usage key is the process count.
func (p Policy) Rank(r evictionengine.Resource, now time.Time, candidates []evictionengine.Candidate) {
	usage := evictionengine.ByUsageAboveRequest
	if r == evictionengine.ResourcePIDs {
		usage = evictionengine.ByUsage
	}
	evictionengine.SortBy(candidates, p.byProtection(now), evictionengine.ByPriority, byYoungest, usage)
}

// byProtection puts pods younger than protect_min_age first.
func (p Policy) byProtection(now time.Time) evictionengine.Compare {
	return func(a, b *evictionengine.Candidate) int {
		pa, pb := p.protected(a.Pod, now), p.protected(b.Pod, now)
		switch {
		case pa == pb:
			return 0
		case pb:
			return -1
		default:
			return 1
		}
	}
}

func (p Policy) protected(pod *typesv1.Pod, now time.Time) bool {
	start := pod.GetStartTime()
	return p.protectMinAge > 0 && start != nil && now.Sub(start.AsTime()) >= p.protectMinAge
}

// byYoungest puts the pod that started last first; a pod that has not
// started yet counts as the youngest.
func byYoungest(a, b *evictionengine.Candidate) int {
	sa, sb := a.Pod.GetStartTime(), b.Pod.GetStartTime()
	switch {
	case sa == nil && sb == nil:
		return 0
	case sa == nil:
		return -1
	case sb == nil:
		return 1
	}
	return cmp.Compare(sb.AsTime().UnixNano(), sa.AsTime().UnixNano())
}

// Admit follows the kubelet, with one more rule under MemoryPressure alone: a
// pod the kubelet would admit is rejected when it would be the next to go,
// that is when no unprotected evictable pod has a lower priority. Admitting
// it would only buy an eviction: a new pod is the youngest, and the youngest
// goes first among equals. Until the engine has seen a Synchronize it
// cannot tell, and admits as the kubelet does.
func (p Policy) Admit(a evictionengine.AdmitContext) evictionengine.Admission {
	decision := evictionengine.UpstreamAdmission(a)
	if !decision.Admit || !a.OnlyMemoryPressure() || a.Pod.GetCritical() || !a.Synchronized {
		return decision
	}
	priority := a.Pod.GetPriority()
	for _, pod := range a.Evictable {
		if pod.GetPriority() < priority && !p.protected(pod, a.Now) {
			return decision
		}
	}
	return evictionengine.Admission{Message: evictionengine.NodeConditionMessage(a.Pressure) +
		fmt.Sprintf("No pod the node would evict has a priority below %d, so this pod would be evicted first. ", priority)}
}
