package syncloop

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/microlet/microlet/core/pods/podconfig"
	"github.com/microlet/microlet/core/pods/status"
)

// TestActiveDeadline: a running pod whose activeDeadlineSeconds passes is
// synced by the tick, fails with upstream's DeadlineExceeded reason and
// event, and has its containers stopped.
func TestActiveDeadline(t *testing.T) {
	h := newHarness(t, 0)
	rec := record.NewFakeRecorder(10)
	h.loop.opts.Generator.ShouldEvict = ActiveDeadline(h.statuses, rec)
	pod := h.newPod("job", v1.RestartPolicyAlways)
	deadline := int64(1)
	pod.Spec.ActiveDeadlineSeconds = &deadline
	h.send(podconfig.OpAdd, pod)
	h.waitPhase(pod, v1.PodRunning)

	// The sync tick's part: sync whatever is past its deadline.
	eventually(t, "the pod is past its deadline", func() bool { return slices.Contains(h.loop.pastDeadline(), pod.UID) })
	h.loop.syncKnown(pod.UID)
	eventually(t, "the pod fails and is stopped", func() bool {
		st, _ := h.status(pod)
		return st.Phase == v1.PodFailed && h.runtime.killed(pod.UID)
	})
	if st, _ := h.status(pod); st.Reason != status.DeadlineExceededReason || st.Message != status.DeadlineExceededMessage {
		t.Errorf("reason %q message %q, want upstream's", st.Reason, st.Message)
	}
	if got, want := <-rec.Events, "Normal DeadlineExceeded "+status.DeadlineExceededMessage; got != want {
		t.Errorf("event %q, want %q", got, want)
	}
	if slices.Contains(h.loop.pastDeadline(), pod.UID) {
		t.Error("a failed pod is still synced for its deadline")
	}
}
