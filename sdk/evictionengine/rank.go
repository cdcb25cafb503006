package evictionengine

import (
	"cmp"
	"slices"
	"time"

	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// Candidate is a pod the engine may evict, with what a ranking needs to know
// about it for the starved resource.
type Candidate struct {
	Pod *typesv1.Pod
	// HasStats is false when the request carried no stats for the pod.
	HasStats bool
	// Usage of the starved resource: bytes, inodes or processes.
	Usage int64
	// Request for the starved resource; 0 for those a pod cannot request
	// (inodes, pids).
	Request int64
}

// ExceedsRequest reports a pod using more than it requested.
func (c *Candidate) ExceedsRequest() bool { return c.Usage > c.Request }

// Policy is what makes one strategy differ from another: the order in which
// pods go, and who may start under pressure. Everything else (signals,
// thresholds, grace periods, conditions, reclaim, messages) is the engine's.
type Policy interface {
	// Rank orders candidates in place, most urgent eviction first. Critical
	// pods never reach it.
	Rank(r Resource, now time.Time, candidates []Candidate)
	// Admit decides whether a pod may start under the given pressure.
	Admit(a AdmitContext) Admission
}

// Compare is one ranking key: negative when a should go before b, positive
// when after, 0 when the key cannot tell them apart.
type Compare func(a, b *Candidate) int

// SortBy orders candidates by the keys, the first key deciding first (upstream
// orderedBy). Pods tied on every key keep the order of the request.
func SortBy(cs []Candidate, keys ...Compare) {
	slices.SortStableFunc(cs, func(a, b Candidate) int {
		for _, key := range keys {
			if c := key(&a, &b); c != 0 {
				return c
			}
		}
		return 0
	})
}

// ByPriority puts lower priority first (upstream priority).
func ByPriority(a, b *Candidate) int {
	return cmp.Compare(a.Pod.GetPriority(), b.Pod.GetPriority())
}

// ByExceedsRequest puts pods using more than they requested first (upstream
// exceedMemoryRequests, exceedDiskRequests).
func ByExceedsRequest(a, b *Candidate) int {
	if c := byMissingStats(a, b); c != 0 || !a.HasStats {
		return c
	}
	return compareTrueFirst(a.ExceedsRequest(), b.ExceedsRequest())
}

// ByUsageAboveRequest puts the pod using most beyond its request first
// (upstream memory, disk).
func ByUsageAboveRequest(a, b *Candidate) int {
	if c := byMissingStats(a, b); c != 0 || !a.HasStats {
		return c
	}
	return cmp.Compare(b.Usage-b.Request, a.Usage-a.Request)
}

// ByUsage puts the pod using most first (upstream process).
func ByUsage(a, b *Candidate) int {
	if c := byMissingStats(a, b); c != 0 || !a.HasStats {
		return c
	}
	return cmp.Compare(b.Usage, a.Usage)
}

// byMissingStats puts pods without stats first, as every upstream usage key
// does: nothing is known of what they use, so they are assumed the worst.
func byMissingStats(a, b *Candidate) int { return compareTrueFirst(!a.HasStats, !b.HasStats) }

func compareTrueFirst(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	default:
		return 1
	}
}

// MemoryCandidates are a request's evictable (non-critical) pods as
// candidates for memory, with the request and usage the engine ranks them
// by for a memory signal (effective memory request, working set). For a
// strategy that evicts on a signal of its own and ranks as the engine does.
func MemoryCandidates(req *evictionv1.SynchronizeRequest) []Candidate {
	return asCandidates(evictablePods(req), podStatsByUID(req), ResourceMemory, 0)
}

// evictablePods are a request's non-critical pods, in its order.
func evictablePods(req *evictionv1.SynchronizeRequest) []*typesv1.Pod {
	var out []*typesv1.Pod
	for _, pod := range req.GetPods() {
		if !pod.GetCritical() {
			out = append(out, pod)
		}
	}
	return out
}

// podStatsByUID indexes a request's pod stats by pod UID.
func podStatsByUID(req *evictionv1.SynchronizeRequest) map[string]*typesv1.PodStats {
	out := map[string]*typesv1.PodStats{}
	for _, ps := range req.GetPodStats() {
		out[ps.GetPodRef().GetUid()] = ps
	}
	return out
}

// asCandidates are pods as candidates for resource, with their request and,
// where they have stats, their usage of the filesystems in scope.
func asCandidates(pods []*typesv1.Pod, stats map[string]*typesv1.PodStats, resource Resource, scope fsScope) []Candidate {
	out := make([]Candidate, 0, len(pods))
	for _, pod := range pods {
		ps := stats[pod.GetUid()]
		c := Candidate{Pod: pod, HasStats: ps != nil, Request: podRequest(pod, resource)}
		if ps != nil {
			c.Usage = podUsage(pod, ps, resource, scope)
		}
		out = append(out, c)
	}
	return out
}
