package syncloop

import (
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/cluster/events"
	"github.com/microlet/microlet/core/pods/status"
)

// ActiveDeadline is the status generator's ShouldEvict for
// spec.activeDeadlineSeconds, as upstream's active deadline handler: a pod
// past its deadline fails with reason DeadlineExceeded, which ends its
// sync and has its worker stop its containers, and gets a Normal event
// saying so.
func ActiveDeadline(statuses *status.Manager, recorder events.Recorder) func(*v1.Pod) (bool, string, string) {
	recorder = events.OrNop(recorder)
	return func(pod *v1.Pod) (bool, string, string) {
		if !status.PastActiveDeadline(pod, currentStatus(statuses, pod), time.Now()) {
			return false, "", ""
		}
		recorder.Eventf(pod, v1.EventTypeNormal, status.DeadlineExceededReason, status.DeadlineExceededMessage)
		return true, status.DeadlineExceededReason, status.DeadlineExceededMessage
	}
}

// pastDeadline lists the running desired pods past their active deadline,
// for the sync tick to sync at once rather than at their next resync
// (upstream's ShouldSync of the same handler).
func (l *Loop) pastDeadline() []types.UID {
	var uids []types.UID
	now := time.Now()
	for _, pod := range l.desired.all() {
		if pod.Spec.ActiveDeadlineSeconds == nil {
			continue
		}
		st := l.previousStatus(pod)
		if !status.IsTerminalPhase(st.Phase) && status.PastActiveDeadline(pod, st, now) {
			uids = append(uids, pod.UID)
		}
	}
	return uids
}

// currentStatus is the status manager's status of the pod, or else the
// pod's own.
func currentStatus(statuses *status.Manager, pod *v1.Pod) v1.PodStatus {
	if st, ok := statuses.GetPodStatus(pod.UID); ok {
		return st
	}
	return pod.Status
}
