// Package shutdown is graceful node shutdown as the kubelet's
// (pkg/kubelet/nodeshutdown): a logind "delay" inhibitor lock on the system
// D-Bus holds the machine's shutdown back while the pods are stopped, by
// priority group, each group within its grace period; then the lock is
// released and the shutdown goes on.
package shutdown

import (
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/component-helpers/scheduling/corev1"
)

// Upstream's texts (nodeshutdown_manager.go).
const (
	// NotAdmittedReason and notAdmittedMessage refuse a pod while the node
	// shuts down.
	NotAdmittedReason  = "NodeShutdown"
	notAdmittedMessage = "Pod was rejected as the node is shutting down."
	// TerminatedReason and TerminatedMessage mark each pod stopped.
	TerminatedReason  = "Terminated"
	TerminatedMessage = "Pod was terminated in response to imminent node shutdown."
)

// Priorities of the two groups shutdown_grace_period and
// shutdown_grace_period_critical_pods make (upstream migrateConfig):
// scheduling.DefaultPriorityWhenNoDefaultClassExists and
// scheduling.SystemCriticalPriority.
const (
	defaultPriority  int32 = 0
	criticalPriority int32 = 2 * 1000000000
)

// Period is one priority group's budget: pods of at least Priority (and
// below the next group's) get Grace to stop.
type Period struct {
	Priority int32
	Grace    time.Duration
}

// Periods are the groups, lowest priority first: byPriority when given,
// else the two groups shutdown_grace_period (the total) and
// shutdown_grace_period_critical_pods (the critical pods' part of it) make;
// none when shutdown is not handled (a total of 0, or a critical part
// greater than the total, which upstream ignores too).
func Periods(total, critical time.Duration, byPriority []Period) []Period {
	periods := append([]Period(nil), byPriority...)
	if len(periods) == 0 {
		if total == 0 || critical > total || critical < 0 {
			return nil
		}
		periods = []Period{{Priority: defaultPriority, Grace: total - critical}, {Priority: criticalPriority, Grace: critical}}
	}
	sort.SliceStable(periods, func(i, j int) bool { return periods[i].Priority < periods[j].Priority })
	return periods
}

// Requested is the whole time the groups need: logind's
// InhibitDelayMaxSec must be at least this.
func Requested(periods []Period) time.Duration {
	var sum time.Duration
	for _, p := range periods {
		sum += p.Grace
	}
	return sum
}

// Group is one period's pods.
type Group struct {
	Period
	Pods []*v1.Pod
}

// Groups puts each pod in the group of the highest priority not above its
// own (a pod below every group in the lowest, upstream groupByPriority),
// in the order they are stopped: lowest priority first.
func Groups(periods []Period, pods []*v1.Pod) []Group {
	groups := make([]Group, len(periods))
	for i, p := range periods {
		groups[i].Period = p
	}
	if len(groups) == 0 {
		return nil
	}
	for _, pod := range pods {
		priority := corev1.PodPriority(pod)
		i := sort.Search(len(groups), func(i int) bool { return groups[i].Priority > priority }) - 1
		if i < 0 {
			i = 0
		}
		groups[i].Pods = append(groups[i].Pods, pod)
	}
	return groups
}

// PodGrace is the grace period a pod of group is killed with, in seconds:
// its own terminationGracePeriodSeconds, capped by the group's period.
func PodGrace(pod *v1.Pod, group Period) int64 {
	grace := int64(group.Grace / time.Second)
	if own := pod.Spec.TerminationGracePeriodSeconds; own != nil && *own <= grace {
		grace = *own
	}
	return grace
}
