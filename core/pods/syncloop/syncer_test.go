package syncloop

import (
	"errors"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/pods/podconfig"
	"github.com/microlet/microlet/core/pods/podruntime"
	"github.com/microlet/microlet/core/pods/podworkers"
	"github.com/microlet/microlet/core/pods/status"
	"github.com/microlet/microlet/core/runtime/container"
)

func TestSyncPodWaitsForThePodNetwork(t *testing.T) {
	h := newHarness(t, 0)
	h.health.setNetworkErr(errors.New("cni config uninitialized"))

	pod := h.newPod("web", v1.RestartPolicyAlways)
	_, err := h.loop.SyncPod(h.ctx, podworkers.Sync, pod, &container.PodStatus{UID: pod.UID})
	if err == nil || err.Error() != "network is not ready: cni config uninitialized" {
		t.Errorf("SyncPod = %v, want %q (the workers retry it sooner)", err, "network is not ready: cni config uninitialized")
	}
	if len(h.runtime.synced(pod.UID)) != 0 {
		t.Error("the runtime synced a pod while the network is not ready")
	}

	host := h.newPod("host", v1.RestartPolicyAlways)
	host.Spec.HostNetwork = true
	if _, err := h.loop.SyncPod(h.ctx, podworkers.Sync, host, &container.PodStatus{UID: host.UID}); err != nil {
		t.Errorf("SyncPod of a hostNetwork pod: %v; it needs no pod network", err)
	}
	if len(h.runtime.synced(host.UID)) != 1 {
		t.Error("the runtime did not sync the hostNetwork pod")
	}
}

func TestSyncPodOfAFinishedPodIsTerminal(t *testing.T) {
	h := newHarness(t, 0)
	pod := h.newPod("job", v1.RestartPolicyNever)
	h.runtime.run(pod.UID, pod.Name, "app")
	h.runtime.exit(pod.UID, "app", 0)
	rs, _ := h.runtime.GetPodStatus(h.ctx, pod.UID, pod.Name, pod.Namespace)

	terminal, err := h.loop.SyncPod(h.ctx, podworkers.Sync, pod, rs)
	if !terminal || err != nil {
		t.Errorf("SyncPod = %t, %v; want terminal", terminal, err)
	}
	if st, _ := h.status(pod); st.Phase != v1.PodSucceeded {
		t.Errorf("phase %s, want Succeeded", st.Phase)
	}
	if len(h.runtime.synced(pod.UID)) != 0 {
		t.Error("the runtime synced a finished pod")
	}
}

func TestSyncPodErrors(t *testing.T) {
	crashLoop := podruntime.StepResult{Action: podruntime.ActionStartContainer, Target: "app",
		Err: fmt.Errorf("%w: back-off 10s restarting failed container=app", podruntime.ErrCrashLoopBackOff), Reason: "CrashLoopBackOff"}
	pullBackOff := podruntime.StepResult{Action: podruntime.ActionStartContainer, Target: "sidecar",
		Err: fmt.Errorf("%w: Back-off pulling image", podruntime.ErrImagePullBackOff), Reason: "ImagePullBackOff"}
	createFailed := podruntime.StepResult{Action: podruntime.ActionCreatePodSandbox, Target: "web",
		Err: fmt.Errorf("%w: no space left", podruntime.ErrCreatePodSandbox), Reason: "CreatePodSandboxError"}
	tests := []struct {
		name    string
		steps   []podruntime.StepResult
		backOff bool // the error says the pod only waits out a backoff
		failed  bool // the error is a failure
	}{
		{"every step worked", []podruntime.StepResult{{Action: podruntime.ActionStartContainer, Target: "app"}}, false, false},
		{"a crash loop backoff", []podruntime.StepResult{crashLoop}, true, false},
		{"both backoffs", []podruntime.StepResult{crashLoop, pullBackOff}, true, false},
		{"a failure beside a backoff", []podruntime.StepResult{crashLoop, createFailed}, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t, 0)
			h.runtime.syncResult = func(*v1.Pod) *podruntime.SyncResult { return &podruntime.SyncResult{Steps: tt.steps} }
			pod := h.newPod("web", v1.RestartPolicyAlways)
			_, err := h.loop.SyncPod(h.ctx, podworkers.Sync, pod, &container.PodStatus{UID: pod.UID})
			if got := errors.Is(err, podworkers.ErrBackOff); got != tt.backOff {
				t.Errorf("SyncPod = %v; wraps ErrBackOff: %t, want %t", err, got, tt.backOff)
			}
			if got := err != nil && !tt.backOff; got != tt.failed {
				t.Errorf("SyncPod = %v; want a failure: %t", err, tt.failed)
			}
			if err != nil && !errors.Is(err, podruntime.ErrCrashLoopBackOff) && tt.backOff {
				t.Errorf("SyncPod = %v; the backoff's own error is lost", err)
			}
		})
	}
}

func TestRecordReasons(t *testing.T) {
	start := func(target string, err error, reason, message string) podruntime.StepResult {
		return podruntime.StepResult{Action: podruntime.ActionStartContainer, Target: target, Err: err, Reason: reason, Message: message}
	}
	failed := errors.New("failed")
	tests := []struct {
		name  string
		known map[string]string // reasons cached before, by container
		steps []podruntime.StepResult
		want  map[string]string // reasons cached after, by container
	}{
		{"a failed start is recorded",
			nil,
			[]podruntime.StepResult{start("app", failed, "CrashLoopBackOff", "back-off 10s")},
			map[string]string{"app": "CrashLoopBackOff: back-off 10s"}},
		{"a successful start clears the container's reason",
			map[string]string{"app": "CrashLoopBackOff: back-off 10s", "sidecar": "ErrImagePull: no such image"},
			[]podruntime.StepResult{start("app", nil, "", "")},
			map[string]string{"sidecar": "ErrImagePull: no such image"}},
		{"a later failure replaces the reason",
			map[string]string{"app": "ErrImagePull: no such image"},
			[]podruntime.StepResult{start("app", failed, "CreateContainerConfigError", "hostPath /x is missing")},
			map[string]string{"app": "CreateContainerConfigError: hostPath /x is missing"}},
		{"other actions are not container start reasons",
			map[string]string{"app": "CrashLoopBackOff: back-off 10s"},
			[]podruntime.StepResult{
				{Action: podruntime.ActionKillContainer, Target: "app"},
				{Action: podruntime.ActionCreatePodSandbox, Target: "web", Err: failed, Reason: "CreatePodSandboxError", Message: "no space"},
			},
			map[string]string{"app": "CrashLoopBackOff: back-off 10s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			reasons := status.NewReasonCache()
			l := &Loop{opts: Options{Reasons: reasons}}
			const uid = types.UID("web-uid")
			for name, r := range tt.known {
				reason, message := splitReason(r)
				reasons.Add(uid, name, reason, message)
			}
			pod := &v1.Pod{}
			pod.UID = uid
			l.recordReasons(pod, &podruntime.SyncResult{Steps: tt.steps})
			for _, name := range []string{"app", "sidecar", "web"} {
				got, ok := reasons.Get(uid, name)
				want, wantOK := tt.want[name]
				if ok != wantOK || (ok && got.Reason+": "+got.Message != want) {
					t.Errorf("reason of %s = %+v (%t), want %q (%t)", name, got, ok, want, wantOK)
				}
			}
		})
	}
}

func splitReason(s string) (string, string) {
	for i := 0; i+1 < len(s); i++ {
		if s[i] == ':' && s[i+1] == ' ' {
			return s[:i], s[i+2:]
		}
	}
	return s, ""
}

func TestPodsWithStatus(t *testing.T) {
	h := newHarness(t, 0)
	h.admitter.set(Admission{Retry: true, Message: "waits"})
	parked := h.newPod("parked", v1.RestartPolicyAlways)
	h.send(podconfig.OpAdd, parked)
	h.admitter.set(Admission{Reason: "OutOfmemory", Message: "no memory"})
	refused := h.newPod("refused", v1.RestartPolicyAlways)
	h.send(podconfig.OpAdd, refused)
	h.admitter.set(Admission{Admit: true})
	running := h.newPod("running", v1.RestartPolicyAlways)
	h.send(podconfig.OpAdd, running)
	h.waitPhase(running, v1.PodRunning)

	got := h.loop.PodsWithStatus()
	if len(got) != 3 || got[0].Name != "parked" || got[1].Name != "refused" || got[2].Name != "running" {
		t.Fatalf("PodsWithStatus = %v, want parked, refused, running (oldest first)", got)
	}
	if got[0].Status.Phase != "" {
		t.Errorf("the parked pod has phase %q, want none yet", got[0].Status.Phase)
	}
	if got[1].Status.Phase != v1.PodFailed || got[1].Status.Reason != "OutOfmemory" {
		t.Errorf("the refused pod's status %+v, want Failed with OutOfmemory", got[1].Status)
	}
	if got[2].Status.Phase != v1.PodRunning || got[2].Status.StartTime == nil || got[2].Status.StartTime.After(time.Now()) {
		t.Errorf("the running pod's status %+v, want Running with its start time", got[2].Status)
	}
	// The answer is a copy: the desired pods keep no status.
	got[2].Status.Phase = v1.PodUnknown
	for _, p := range h.loop.DesiredPods() {
		if p.Status.Phase != "" {
			t.Errorf("desired pod %s has a status %q", p.Name, p.Status.Phase)
		}
	}
}

func TestSyncPodRecordsTheStatusOfTheContainersItStarted(t *testing.T) {
	h := newHarness(t, 0)
	pod := h.newPod("web", v1.RestartPolicyAlways)
	if _, err := h.loop.SyncPod(h.ctx, podworkers.Sync, pod, &container.PodStatus{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}); err != nil {
		t.Fatal(err)
	}
	// Not left to the next relist: the status says Running as SyncPod
	// returns.
	st, ok := h.status(pod)
	if !ok || st.Phase != v1.PodRunning {
		t.Fatalf("phase after the sync that started the pod's container: %q, want Running", st.Phase)
	}
	if len(st.ContainerStatuses) != 1 || st.ContainerStatuses[0].State.Running == nil {
		t.Errorf("container statuses %+v, want app running", st.ContainerStatuses)
	}
	cached, err := h.loop.opts.Cache.Get(pod.UID)
	if err != nil || len(cached.RunningContainers()) != 1 {
		t.Errorf("runtime cache after the sync: %+v, %v; want the container read back", cached, err)
	}
}

func TestSyncPodThatStartsNothingReadsNothingBack(t *testing.T) {
	h := newHarness(t, 0)
	pod := h.newPod("web", v1.RestartPolicyAlways)
	h.runtime.run(pod.UID, pod.Name, "app") // the runtime has it, the sync's status does not
	h.runtime.syncResult = func(*v1.Pod) *podruntime.SyncResult {
		return &podruntime.SyncResult{Steps: []podruntime.StepResult{{Action: podruntime.ActionStartContainer, Target: "app",
			Err: fmt.Errorf("%w: no such file", podruntime.ErrRunContainer), Reason: podruntime.ReasonRunContainerError}}}
	}
	if _, err := h.loop.SyncPod(h.ctx, podworkers.Sync, pod, &container.PodStatus{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace}); err == nil {
		t.Fatal("SyncPod of a failed start: no error")
	}
	if st, _ := h.status(pod); st.Phase != v1.PodPending {
		t.Errorf("phase %q after a sync that started nothing, want Pending: the status is the one the sync began with", st.Phase)
	}
}
