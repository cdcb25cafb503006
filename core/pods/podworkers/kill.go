package podworkers

import (
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/cluster/events"
)

// killTimeoutFloor is the shortest wait for a kill, upstream's minTimeout:
// time for kubelet-to-runtime traffic after SIGKILL.
const killTimeoutFloor = 10 * time.Second

// KillPod asks for a pod to be stopped and waits until its containers are
// all stopped, as upstream's killPodNow (the kill the eviction manager and
// node shutdown use). It gives up after 1.5 times the grace period (the
// override, else the pod's terminationGracePeriodSeconds), and at least
// 10 s; the pod keeps terminating after that.
func (p *PodWorkers) KillPod(pod *v1.Pod, evict bool, gracePeriodOverride *int64, statusFn PodStatusFunc) error {
	var gracePeriod int64
	switch {
	case gracePeriodOverride != nil:
		gracePeriod = *gracePeriodOverride
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		gracePeriod = *pod.Spec.TerminationGracePeriodSeconds
	}
	timeout := max(time.Duration(gracePeriod+gracePeriod/2)*time.Second, killTimeoutFloor)

	done := make(chan struct{})
	p.UpdatePod(UpdatePodOptions{
		Pod:        pod,
		UpdateType: Kill,
		KillPodOptions: &KillPodOptions{
			CompletedCh:                              done,
			Evict:                                    evict,
			PodStatusFunc:                            statusFn,
			PodTerminationGracePeriodSecondsOverride: gracePeriodOverride,
		},
	})
	select {
	case <-done:
		return nil
	case <-p.clock.After(timeout):
		p.log.Warn("the container runtime did not kill the pod within its grace period", "pod", pod.Namespace+"/"+pod.Name, "uid", pod.UID, "timeout", timeout)
		p.recorder.Event(pod, v1.EventTypeWarning, events.ExceededGracePeriod, "Container runtime did not kill the pod within specified grace period.")
		return fmt.Errorf("timeout waiting to kill pod %s/%s after %v", pod.Namespace, pod.Name, timeout)
	}
}
