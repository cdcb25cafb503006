package syncloop

import (
	"context"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/pods/podworkers"
)

// resize decides on the in-place resize an updated pod asks for, as
// upstream's HandlePodUpdates does before the pod's worker sees it: the
// resized pod must pass the admitters next to the other admitted pods
// (at their allocated resources), else the resize is Deferred.
func (l *Loop) resize(ctx context.Context, pod *v1.Pod) {
	if l.opts.Resizes == nil {
		return
	}
	var allocatable v1.ResourceList
	if l.opts.Allocatable != nil {
		allocatable = l.opts.Allocatable()
	}
	l.opts.Resizes.Resize(pod, allocatable, func(resized *v1.Pod) (bool, string) {
		verdict, _ := admit(ctx, l.opts.Admitters, resized, l.admittedPods(resized.UID))
		return verdict.Admit, verdict.Message
	})
}

// retryDeferredResizes tries Deferred resizes again (upstream retries them
// when pods leave or shrink, and periodically) and syncs the pods whose
// resize now fits.
func (l *Loop) retryDeferredResizes(ctx context.Context) {
	if l.opts.Resizes == nil {
		return
	}
	for _, uid := range l.opts.Resizes.PendingDeferred() {
		pod, ok := l.desired.get(uid)
		if !ok || l.rejected.has(uid) {
			continue
		}
		if _, waiting := l.pending.get(uid); waiting {
			continue
		}
		l.resize(ctx, pod)
		l.workers.UpdatePod(podworkers.UpdatePodOptions{UpdateType: podworkers.Sync, Pod: pod, StartTime: time.Now()})
	}
}

// allocated is the pod as the node runs it: with the resources it was
// allocated, which lag its spec while a resize is pending.
func (l *Loop) allocated(pod *v1.Pod) *v1.Pod {
	if l.opts.Resizes == nil {
		return pod
	}
	return l.opts.Resizes.Allocated(pod)
}
