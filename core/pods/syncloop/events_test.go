package syncloop

import (
	"errors"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/microlet/microlet/core/pods/podconfig"
	"github.com/microlet/microlet/core/pods/podworkers"
	"github.com/microlet/microlet/core/runtime/container"
)

// TestNetworkNotReadyEvent: a pod that waits for the pod network says so
// in upstream's NetworkNotReady event.
func TestNetworkNotReadyEvent(t *testing.T) {
	h := newHarness(t, 0)
	rec := record.NewFakeRecorder(1)
	h.loop.opts.Recorder = rec
	h.health.setNetworkErr(errors.New("cni config uninitialized"))
	pod := h.newPod("web", v1.RestartPolicyAlways)
	_, _ = h.loop.SyncPod(h.ctx, podworkers.Sync, pod, &container.PodStatus{UID: pod.UID})
	select {
	case got := <-rec.Events:
		if want := "Warning NetworkNotReady network is not ready: cni config uninitialized"; got != want {
			t.Errorf("event %q, want %q", got, want)
		}
	default:
		t.Error("no NetworkNotReady event")
	}
}

// TestRejectedPodEvent: a pod refused at admission gets upstream's event
// with the refusal's reason and message (the kubelet's rejectPod).
func TestRejectedPodEvent(t *testing.T) {
	h := newHarness(t, 0)
	rec := record.NewFakeRecorder(1)
	h.loop.opts.Recorder = rec
	h.admitter.set(Admission{Reason: "OutOfcpu", Message: "Node didn't have enough resource: cpu, requested: 500, used: 1800, capacity: 2000"})
	pod := h.newPod("hungry", v1.RestartPolicyAlways)
	h.send(podconfig.OpAdd, pod)
	h.status(pod)
	select {
	case got := <-rec.Events:
		if want := "Warning OutOfcpu Node didn't have enough resource: cpu, requested: 500, used: 1800, capacity: 2000"; got != want {
			t.Errorf("event %q, want %q", got, want)
		}
	default:
		t.Error("no event for the rejected pod")
	}
}
