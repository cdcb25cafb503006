package syncloop

import (
	"context"
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/pods/podconfig"
	"github.com/microlet/microlet/core/pods/status"
)

func TestMaxPodsAdmitter(t *testing.T) {
	tests := []struct {
		name     string
		max      int
		admitted int
		want     Admission
	}{
		{"room left", 2, 1, Admission{Admit: true}},
		{"full", 2, 2, Admission{Reason: "OutOfpods", Message: "Node didn't have enough resource: pods, requested: 1, used: 2, capacity: 2"}},
		{"no limit", 0, 500, Admission{Admit: true}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			admitted := make([]*v1.Pod, tt.admitted)
			if got := (maxPodsAdmitter{max: tt.max}).Admit(context.Background(), &v1.Pod{}, admitted); got != tt.want {
				t.Errorf("Admit = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPodsBeyondMaxPodsAreRejected(t *testing.T) {
	h := newHarness(t, 1)
	first, second := h.newPod("first", v1.RestartPolicyAlways), h.newPod("second", v1.RestartPolicyAlways)
	// In one update, the older pod is admitted first, whatever the order.
	h.send(podconfig.OpAdd, second, first)
	h.waitSynced(first)

	st, ok := h.status(second)
	want := status.RejectedStatus(second, "OutOfpods", "Node didn't have enough resource: pods, requested: 1, used: 1, capacity: 1")
	if !ok || st.Phase != v1.PodFailed || st.Reason != want.Reason || st.Message != want.Message {
		t.Errorf("the second pod's status is %+v (%t), want Failed, %q, %q", st, ok, want.Reason, want.Message)
	}
	if got := h.activeNames(); !slices.Equal(got, []string{"first"}) {
		t.Errorf("active pods %v, want [first]", got)
	}
	expectNeverRuns(h, second)
}

func TestRefusedPodGetsAFailedStatusAndNeverRuns(t *testing.T) {
	h := newHarness(t, 0)
	h.admitter.set(Admission{Reason: "OutOfcpu", Message: "Node didn't have enough resource: cpu, requested: 500, used: 1800, capacity: 2000"})
	pod := h.newPod("hungry", v1.RestartPolicyAlways)
	h.send(podconfig.OpAdd, pod)

	st, ok := h.status(pod)
	if !ok || st.Phase != v1.PodFailed || st.Reason != "OutOfcpu" ||
		st.Message != "Pod was rejected: Node didn't have enough resource: cpu, requested: 500, used: 1800, capacity: 2000" {
		t.Errorf("status %+v (%t), want Failed with the admitter's reason and message", st, ok)
	}
	// The refusal stands: the admitter is not asked again.
	h.admitter.set(Admission{Admit: true})
	expectNeverRuns(h, pod)
	if len(h.admitter.asked) != 1 {
		t.Errorf("the admitter was asked %d times, want once", len(h.admitter.asked))
	}
}

func TestPodFinishedAtItsSourceIsNotAdmittedAgain(t *testing.T) {
	h := newHarness(t, 0)
	h.admitter.set(Admission{Reason: "OutOfcpu", Message: "Node didn't have enough resource: cpu"})
	pod := h.newPod("evicted", v1.RestartPolicyAlways)
	pod.Status = v1.PodStatus{Phase: v1.PodFailed, Reason: "Evicted", Message: "The node was low on resource: memory."}
	h.send(podconfig.OpAdd, pod)
	eventually(t, "the workers finish the pod", func() bool { return h.loop.workers.IsPodKnownTerminated(pod.UID) })
	if len(h.admitter.asked) != 0 {
		t.Errorf("the admitter was asked about a Failed pod")
	}
	if st, ok := h.status(pod); ok && st.Reason != "Evicted" {
		t.Errorf("status %+v, want the pod's own reason kept", st)
	}
}

// expectNeverRuns sends a rejected pod through every path that could
// start it and checks that none does.
func expectNeverRuns(h *harness, pod *v1.Pod) {
	h.t.Helper()
	changed := pod.DeepCopy()
	changed.Labels = map[string]string{"changed": "yes"}
	h.send(podconfig.OpUpdate, changed)
	h.send(podconfig.OpReconcile, changed)
	h.loop.syncKnown(pod.UID)
	h.send(podconfig.OpAdd) // the loop has seen the source
	h.loop.housekeeping(h.ctx)
	h.loop.housekeeping(h.ctx)
	if got := h.runtime.synced(pod.UID); len(got) != 0 {
		h.t.Errorf("the rejected pod %s was synced %d times", pod.Name, len(got))
	}
	if slices.Contains(h.activeNames(), pod.Name) {
		h.t.Errorf("the rejected pod %s is active", pod.Name)
	}
}

func TestRetryParksThePodUntilTheAdmitterDecides(t *testing.T) {
	h := newHarness(t, 0)
	h.admitter.set(Admission{Retry: true, Message: "pod default/web waits for the cgroup plugin"})
	pod := h.newPod("web", v1.RestartPolicyAlways)
	// The pod ran before the core restarted: waiting for admission must
	// not stop it.
	h.runtime.run(pod.UID, pod.Name, "app")
	h.send(podconfig.OpAdd, pod)
	h.loop.housekeeping(h.ctx)

	if st, ok := h.status(pod); ok {
		t.Errorf("a parked pod has status %+v, want none yet", st)
	}
	if len(h.runtime.synced(pod.UID)) != 0 || h.killRequested(pod.UID) {
		t.Errorf("a parked pod was synced or killed")
	}
	if got := h.activeNames(); len(got) != 0 {
		t.Errorf("active pods %v, want none while the pod is parked", got)
	}
	// An update while parked is what runs once admitted.
	changed := pod.DeepCopy()
	changed.Labels = map[string]string{"version": "2"}
	h.send(podconfig.OpUpdate, changed)
	h.loop.syncKnown(pod.UID)
	if len(h.runtime.synced(pod.UID)) != 0 {
		t.Errorf("a parked pod was synced")
	}

	h.admitter.set(Admission{Admit: true})
	h.loop.housekeeping(h.ctx)
	h.waitSynced(pod)
	if got := h.runtime.synced(pod.UID)[0]; got.Labels["version"] != "2" {
		t.Errorf("the pod synced has labels %v, want the update's", got.Labels)
	}
	if got := h.activeNames(); !slices.Equal(got, []string{"web"}) {
		t.Errorf("active pods %v, want [web]", got)
	}
	if h.killRequested(pod.UID) {
		t.Errorf("the pod's running containers were killed while it waited for admission")
	}
}

// ActivePods is read by the host service while the loop admits and
// rejects pods.
func TestActivePodsWhileRejecting(t *testing.T) {
	h := newHarness(t, 0)
	h.admitter.set(Admission{Reason: "OutOfcpu", Message: "no"})
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			default:
				h.loop.ActivePods()
			}
		}
	}()
	for i := range 2000 {
		pod := h.newPod(fmt.Sprintf("p%d", i), v1.RestartPolicyAlways)
		h.send(podconfig.OpAdd, pod)
		h.send(podconfig.OpRemove, pod)
	}
	close(stop)
	<-stopped
}
