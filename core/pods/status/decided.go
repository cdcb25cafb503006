package status

import (
	"time"

	v1 "k8s.io/api/core/v1"
)

// Reasons of the statuses the node agent decides itself, upstream's.
const (
	// EvictedReason is the reason of an evicted pod's Failed phase.
	EvictedReason = "Evicted"
	// DeadlineExceededReason and DeadlineExceededMessage are the reason
	// and message of a pod failed for its spec.activeDeadlineSeconds
	// (upstream's active deadline handler; the event's reason too).
	DeadlineExceededReason  = "DeadlineExceeded"
	DeadlineExceededMessage = "Pod was active on the node longer than the specified deadline"
)

// PastActiveDeadline says whether the pod has been active on the node for
// its spec.activeDeadlineSeconds or longer, counted from the start time of
// st (the status manager's, else the pod's own), as upstream's
// activeDeadlineHandler: a pod without a deadline or a start time never is.
func PastActiveDeadline(pod *v1.Pod, st v1.PodStatus, now time.Time) bool {
	if pod.Spec.ActiveDeadlineSeconds == nil || st.StartTime == nil {
		return false
	}
	return now.Sub(st.StartTime.Time) >= time.Duration(*pod.Spec.ActiveDeadlineSeconds)*time.Second
}

// RejectedStatus is the status of a pod that admission refused, as
// upstream's rejectPod: Failed, with the admission's reason (such as
// "OutOfcpu") and "Pod was rejected: <message>".
func RejectedStatus(pod *v1.Pod, reason, message string) v1.PodStatus {
	return v1.PodStatus{
		QOSClass: GetPodQOS(pod),
		Phase:    v1.PodFailed,
		Reason:   reason,
		Message:  "Pod was rejected: " + message,
	}
}

// EvictedStatusFunc returns the status change of a pod the node agent
// evicts, as upstream's eviction manager: Failed, reason Evicted, the
// message, and a DisruptionTarget condition (reason
// TerminationByKubelet) saying why. Pass it as the kill's PodStatusFunc.
func EvictedStatusFunc(pod *v1.Pod, message string) func(*v1.PodStatus) {
	return func(s *v1.PodStatus) {
		s.Phase = v1.PodFailed
		s.Reason = EvictedReason
		s.Message = message
		setDisruptedByKubelet(s, pod, message)
	}
}

// ShutdownStatusFunc returns the status change of a pod stopped for the
// node's shutdown, as upstream's node shutdown manager: Failed unless it
// already Succeeded, the reason and message, and a DisruptionTarget
// condition (reason TerminationByKubelet). Pass it as the kill's
// PodStatusFunc.
func ShutdownStatusFunc(pod *v1.Pod, reason, message string) func(*v1.PodStatus) {
	return func(s *v1.PodStatus) {
		if s.Phase != v1.PodSucceeded {
			s.Phase = v1.PodFailed
		}
		s.Reason = reason
		s.Message = message
		setDisruptedByKubelet(s, pod, message)
	}
}

// setDisruptedByKubelet sets s's DisruptionTarget condition, reason
// TerminationByKubelet, with message.
func setDisruptedByKubelet(s *v1.PodStatus, pod *v1.Pod, message string) {
	s.Conditions = replaceOrAppendCondition(s.Conditions, &v1.PodCondition{
		Type:               v1.DisruptionTarget,
		ObservedGeneration: pod.Generation,
		Status:             v1.ConditionTrue,
		Reason:             v1.PodReasonTerminationByKubelet,
		Message:            message,
	})
}
