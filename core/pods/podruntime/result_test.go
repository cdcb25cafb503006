package podruntime

import (
	"errors"
	"strings"
	"testing"
)

func TestSyncResult(t *testing.T) {
	var r SyncResult
	r.add(StepResult{Action: ActionCreatePodSandbox, Target: "web_default(uid-1)"})
	crash := StepResult{Action: ActionStartContainer, Target: "a"}
	crash.fail(ErrCrashLoopBackOff, "back-off 10s restarting failed container=a pod=web_default(uid-1)")
	r.add(crash)
	if err := r.Err(); !errors.Is(err, ErrCrashLoopBackOff) || !strings.Contains(err.Error(), "StartContainer a: CrashLoopBackOff: back-off 10s") {
		t.Errorf("Err() = %v", err)
	}
	if !r.OnlyBackOff() {
		t.Error("a sync that only backed off is not OnlyBackOff")
	}
	step := StepResult{Action: ActionStartContainer, Target: "b"}
	step.failWith(newReasonError(ErrImagePullBackOff, "Back-off pulling image %q", "x"), ErrRunContainer)
	r.add(step)
	if !r.OnlyBackOff() || step.Reason != ReasonImagePullBackOff || step.Message != `Back-off pulling image "x"` {
		t.Errorf("image pull backoff step %+v, OnlyBackOff %v", step, r.OnlyBackOff())
	}
	boom := StepResult{Action: ActionStartContainer, Target: "c"}
	boom.failWith(errors.New("boom"), ErrRunContainer)
	r.add(boom)
	if r.OnlyBackOff() {
		t.Error("a sync with a real failure is OnlyBackOff")
	}
	err := r.Err()
	for _, want := range []error{ErrCrashLoopBackOff, ErrImagePullBackOff, ErrRunContainer} {
		if !errors.Is(err, want) {
			t.Errorf("Err() = %v, does not wrap %v", err, want)
		}
	}
	if (&SyncResult{Steps: []StepResult{{Action: ActionStartContainer, Target: "a"}}}).Err() != nil {
		t.Error("a successful sync has an error")
	}
	if (&SyncResult{}).OnlyBackOff() {
		t.Error("an empty sync is OnlyBackOff")
	}
}

func TestWithCauseKeepsTextAndCause(t *testing.T) {
	waiting := errors.New("plugin unavailable")
	step := StepResult{}
	step.fail(ErrCreatePodSandbox, "Failed to plan the resources of pod \"a\": plugin unavailable")
	step.Err = withCause(step.Err, waiting)
	if !errors.Is(step.Err, ErrCreatePodSandbox) || !errors.Is(step.Err, waiting) {
		t.Errorf("both the reason and the cause must be reachable: %v", step.Err)
	}
	if got := step.Err.Error(); got != "CreatePodSandboxError: Failed to plan the resources of pod \"a\": plugin unavailable" {
		t.Errorf("text = %q", got)
	}
}
