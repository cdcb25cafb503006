package probes

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
)

// TestUnhealthyEvents: each failed or errored attempt is an Unhealthy
// event against the container, a success with a warning a ProbeWarning,
// with upstream's messages; plain successes and restatements record
// nothing.
func TestUnhealthyEvents(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	rec.IncludeObject = true
	m := newManager(t, Options{Plugin: idleSlot{}, Events: rec})
	pod := newPod("1", v1.Container{Name: "app", Image: "app", ReadinessProbe: httpReadiness(), LivenessProbe: execProbe("true")})
	m.UpdatePod(pod, runtimeOf(pod, "app"))
	failed := report(wireLiveness, settledNone, settledFailure)
	failed.Message = "exit status 1"
	errored := report(wireReadiness, settledNone, probesv1.Result_RESULT_UNKNOWN)
	errored.Message = "timeout"
	warned := report(wireReadiness, settledSuccess, settledSuccess)
	warned.Message, warned.Warning = "Probe terminated redirects, Response body: moved", true
	for _, r := range []*probesv1.ProbeResult{
		report(wireReadiness, settledSuccess, settledSuccess),
		failed,
		errored,
		warned,
		report(wireReadiness, settledSuccess, settledNone),
	} {
		m.apply(t.Context(), r)
	}
	const ref = " involvedObject{kind=Pod,apiVersion=v1}"
	want := []string{
		"Warning Unhealthy Liveness probe failed: exit status 1" + ref,
		"Warning Unhealthy Readiness probe errored and resulted in unknown state: timeout" + ref,
		"Warning ProbeWarning Readiness probe warning: Probe terminated redirects, Response body: moved" + ref,
	}
	for _, w := range want {
		select {
		case got := <-rec.Events:
			if got != w {
				t.Errorf("event %q, want %q", got, w)
			}
		default:
			t.Fatalf("no event, want %q", w)
		}
	}
	select {
	case got := <-rec.Events:
		t.Errorf("unexpected event %q", got)
	default:
	}
}
