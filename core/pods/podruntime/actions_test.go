package podruntime

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/runtime/container"
)

func TestSandboxChanged(t *testing.T) {
	for _, tc := range []struct {
		name        string
		pod         *v1.Pod
		sandboxes   []*container.SandboxStatus
		wantCreate  bool
		wantAttempt uint32
		wantID      string
	}{
		{name: "no sandbox", pod: testPod(), wantCreate: true},
		{name: "ready with an address", pod: testPod(), sandboxes: []*container.SandboxStatus{readySandbox("s1", 2)}, wantAttempt: 2, wantID: "s1"},
		{name: "newest not ready", pod: testPod(), sandboxes: []*container.SandboxStatus{notReadySandbox("s2", 1), readySandbox("s1", 0)},
			wantCreate: true, wantAttempt: 2, wantID: "s2"},
		{name: "more than one ready", pod: testPod(), sandboxes: []*container.SandboxStatus{readySandbox("s2", 1), readySandbox("s1", 0)},
			wantCreate: true, wantAttempt: 2, wantID: "s2"},
		{name: "no address", pod: testPod(), sandboxes: []*container.SandboxStatus{{ID: "s1", State: container.SandboxReady}},
			wantCreate: true, wantAttempt: 1, wantID: "s1"},
		{name: "host network needs no address", pod: testPod(withHostNetwork),
			sandboxes: []*container.SandboxStatus{{ID: "s1", State: container.SandboxReady, HostNetwork: true}}, wantID: "s1"},
		{name: "network namespace changed to host", pod: testPod(withHostNetwork), sandboxes: []*container.SandboxStatus{readySandbox("s1", 3)},
			wantCreate: true, wantAttempt: 4, wantID: ""},
		{name: "network namespace changed to pod", pod: testPod(),
			sandboxes:  []*container.SandboxStatus{{ID: "s1", State: container.SandboxReady, HostNetwork: true}},
			wantCreate: true, wantAttempt: 1, wantID: ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			create, attempt, id := sandboxChanged(tc.pod, statusOf(tc.sandboxes))
			if create != tc.wantCreate || attempt != tc.wantAttempt || id != tc.wantID {
				t.Errorf("sandboxChanged = (%v, %d, %q), want (%v, %d, %q)", create, attempt, id, tc.wantCreate, tc.wantAttempt, tc.wantID)
			}
		})
	}
}

func TestComputePodActions(t *testing.T) {
	basePod := testPod()
	a, b := basePod.Spec.Containers[0], basePod.Spec.Containers[1]
	ready := []*container.SandboxStatus{readySandbox("s1", 0)}
	dead := []*container.SandboxStatus{notReadySandbox("s1", 0)}
	changedA := a
	changedA.Image = "localhost/busybox:2"
	grace := int64(5)

	for _, tc := range []struct {
		name   string
		pod    *v1.Pod
		status *container.PodStatus
		probes ProbeResults
		want   podActions
	}{
		// Sandbox creation and recreation.
		{
			name: "new pod: create the sandbox and start every container",
			pod:  testPod(), status: statusOf(nil),
			want: podActions{KillPod: true, CreateSandbox: true, ContainersToStart: []int{0, 1}},
		},
		{
			name: "dead sandbox: kill, recreate with the next attempt, restart everything",
			pod:  testPod(), status: statusOf(dead, exited(a, "ca", 0), exited(b, "cb", 1)),
			want: podActions{KillPod: true, CreateSandbox: true, SandboxID: "s1", Attempt: 1, ContainersToStart: []int{0, 1}},
		},
		{
			name: "restartPolicy Never whose containers ran keeps its dead sandbox",
			pod:  testPod(withRestartPolicy(v1.RestartPolicyNever)), status: statusOf(dead, exited(a, "ca", 0), exited(b, "cb", 1)),
			want: podActions{KillPod: true, SandboxID: "s1", Attempt: 1},
		},
		{
			name: "restartPolicy Never whose sandbox died before any container retries the sandbox",
			pod:  testPod(withRestartPolicy(v1.RestartPolicyNever)), status: statusOf(dead),
			want: podActions{KillPod: true, CreateSandbox: true, SandboxID: "s1", Attempt: 1, ContainersToStart: []int{0, 1}},
		},
		{
			name: "OnFailure recreation skips containers that succeeded",
			pod:  testPod(withRestartPolicy(v1.RestartPolicyOnFailure)), status: statusOf(dead, exited(a, "ca", 0), exited(b, "cb", 1)),
			want: podActions{KillPod: true, CreateSandbox: true, SandboxID: "s1", Attempt: 1, ContainersToStart: []int{1}},
		},
		{
			name: "OnFailure pod whose containers all succeeded is not recreated",
			pod:  testPod(withRestartPolicy(v1.RestartPolicyOnFailure)), status: statusOf(dead, exited(a, "ca", 0), exited(b, "cb", 0)),
			want: podActions{KillPod: true, SandboxID: "s1", Attempt: 1},
		},
		{
			name: "recreation starts over from the first init container",
			pod:  testPod(withInitContainers(testContainer("init1"), testContainer("init2"))),
			status: statusOf(dead, exited(testContainer("init1"), "i1", 0), exited(testContainer("init2"), "i2", 0),
				exited(a, "ca", 1), exited(b, "cb", 1)),
			want: podActions{KillPod: true, CreateSandbox: true, SandboxID: "s1", Attempt: 1, InitContainersToStart: []int{0}},
		},
		{
			name: "a sandbox without an address is replaced and its running containers killed with it",
			pod:  testPod(), status: statusOf([]*container.SandboxStatus{{ID: "s1", State: container.SandboxReady}}, running(a, "ca"), running(b, "cb")),
			want: podActions{KillPod: true, CreateSandbox: true, SandboxID: "s1", Attempt: 1, ContainersToStart: []int{0, 1}},
		},

		// Regular containers.
		{
			name: "everything running as specified: nothing to do",
			pod:  testPod(), status: statusOf(ready, running(a, "ca"), running(b, "cb")),
			want: podActions{SandboxID: "s1"},
		},
		{
			name: "a missing container is started",
			pod:  testPod(), status: statusOf(ready, running(a, "ca")),
			want: podActions{SandboxID: "s1", ContainersToStart: []int{1}},
		},
		{
			name: "Always restarts a container that exited 0",
			pod:  testPod(), status: statusOf(ready, running(a, "ca"), exited(b, "cb", 0)),
			want: podActions{SandboxID: "s1", ContainersToStart: []int{1}},
		},
		{
			name: "OnFailure restarts a container that failed",
			pod:  testPod(withRestartPolicy(v1.RestartPolicyOnFailure)), status: statusOf(ready, running(a, "ca"), exited(b, "cb", 2)),
			want: podActions{SandboxID: "s1", ContainersToStart: []int{1}},
		},
		{
			name: "OnFailure leaves a container that succeeded",
			pod:  testPod(withRestartPolicy(v1.RestartPolicyOnFailure)), status: statusOf(ready, running(a, "ca"), exited(b, "cb", 0)),
			want: podActions{SandboxID: "s1"},
		},
		{
			name: "Never leaves a container that failed",
			pod:  testPod(withRestartPolicy(v1.RestartPolicyNever)), status: statusOf(ready, running(a, "ca"), exited(b, "cb", 1)),
			want: podActions{SandboxID: "s1"},
		},
		{
			name: "every container done under Never: the pod is killed",
			pod:  testPod(withRestartPolicy(v1.RestartPolicyNever)), status: statusOf(ready, exited(a, "ca", 0), exited(b, "cb", 1)),
			want: podActions{KillPod: true, SandboxID: "s1"},
		},
		{
			name: "a created container that never started is started again",
			pod:  testPod(withRestartPolicy(v1.RestartPolicyNever)), status: statusOf(ready, running(a, "ca"), inState(b, "cb", container.StateCreated)),
			want: podActions{SandboxID: "s1", ContainersToStart: []int{1}},
		},
		{
			name: "a container in an unknown state is killed before it is restarted",
			pod:  testPod(), status: statusOf(ready, running(a, "ca"), inState(b, "cb", container.StateUnknown)),
			want: podActions{SandboxID: "s1", ContainersToStart: []int{1}, ContainersToKill: []containerToKill{{
				ID: "cb", Name: "b", Spec: &testPod().Spec.Containers[1], Reason: killReasonUnknownState,
				Message: `Container is in "unknown" state, try killing it before restart`,
			}}},
		},
		{
			name:   "a running container whose spec changed is replaced, even under Never",
			pod:    testPod(withRestartPolicy(v1.RestartPolicyNever), func(p *v1.Pod) { p.Spec.Containers[0] = changedA }),
			status: statusOf(ready, running(a, "ca"), running(b, "cb")),
			want: podActions{SandboxID: "s1", ContainersToStart: []int{0}, ContainersToKill: []containerToKill{{
				ID: "ca", Name: "a", Spec: &changedA, Reason: killReasonDefinitionChanged,
				Message: "Container a definition changed, will be restarted",
			}}},
		},
		{
			name: "a failed liveness probe kills and restarts the container with the probe's grace period",
			pod:  testPod(), status: statusOf(ready, running(a, "ca"), running(b, "cb")),
			probes: fakeProbes{failed: map[string]*int64{"cb": &grace}},
			want: podActions{SandboxID: "s1", ContainersToStart: []int{1}, ContainersToKill: []containerToKill{{
				ID: "cb", Name: "b", Spec: &b, Reason: killReasonProbe, GracePeriod: &grace,
				Message: "Container failed liveness probe, will be restarted",
			}}},
		},
		{
			name: "under Never a failed probe kills without restart",
			pod:  testPod(withRestartPolicy(v1.RestartPolicyNever)), status: statusOf(ready, running(a, "ca"), running(b, "cb")),
			probes: fakeProbes{failed: map[string]*int64{"cb": nil}},
			want: podActions{SandboxID: "s1", ContainersToKill: []containerToKill{{
				ID: "cb", Name: "b", Spec: &b, Reason: killReasonProbe, Message: "Container failed liveness probe",
			}}},
		},
		{
			name: "a failed probe of the only running container under Never kills the pod",
			pod:  testPod(withRestartPolicy(v1.RestartPolicyNever)), status: statusOf(ready, exited(a, "ca", 0), running(b, "cb")),
			probes: fakeProbes{failed: map[string]*int64{"cb": nil}},
			want: podActions{KillPod: true, SandboxID: "s1", ContainersToKill: []containerToKill{{
				ID: "cb", Name: "b", Spec: &b, Reason: killReasonProbe, Message: "Container failed liveness probe",
			}}},
		},
		{
			name: "a running container the spec does not name is killed",
			pod:  testPod(), status: statusOf(ready, running(a, "ca"), running(b, "cb"), running(testContainer("old"), "co")),
			want: podActions{SandboxID: "s1", ContainersToKill: []containerToKill{{
				ID: "co", Name: "old", Reason: killReasonNotInSpec, Message: "Container old is not in the pod's spec",
			}}},
		},
		{
			name:   "the newest instance decides, older ones do not matter",
			pod:    testPod(withRestartPolicy(v1.RestartPolicyOnFailure)),
			status: statusOf(ready, running(a, "ca2"), exited(a, "ca1", 1), exited(b, "cb2", 0), exited(b, "cb1", 1)),
			want:   podActions{SandboxID: "s1"},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := computePodActions(tc.pod, tc.status, tc.probes)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("computePodActions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestComputePodActionsInitContainers(t *testing.T) {
	i1, i2 := testContainer("init1"), testContainer("init2")
	a, b := testContainer("a"), testContainer("b")
	ready := []*container.SandboxStatus{readySandbox("s1", 0)}
	inits := withInitContainers(i1, i2)

	for _, tc := range []struct {
		name   string
		pod    *v1.Pod
		status *container.PodStatus
		want   podActions
	}{
		{
			name: "nothing ran yet: start the first init container only",
			pod:  testPod(inits), status: statusOf(ready),
			want: podActions{SandboxID: "s1", InitContainersToStart: []int{0}},
		},
		{
			name: "the first runs: wait for it",
			pod:  testPod(inits), status: statusOf(ready, running(i1, "i1")),
			want: podActions{SandboxID: "s1"},
		},
		{
			name: "the first exited 0: start the second",
			pod:  testPod(inits), status: statusOf(ready, exited(i1, "i1", 0)),
			want: podActions{SandboxID: "s1", InitContainersToStart: []int{1}},
		},
		{
			name: "the first failed under Always: restart it",
			pod:  testPod(inits), status: statusOf(ready, exited(i1, "i1", 1)),
			want: podActions{SandboxID: "s1", InitContainersToStart: []int{0}},
		},
		{
			name: "an OOM-killed init container failed even with exit code 0",
			pod:  testPod(inits), status: statusOf(ready, func() *container.ContainerStatus { s := exited(i1, "i1", 0); s.Reason = "OOMKilled"; return s }()),
			want: podActions{SandboxID: "s1", InitContainersToStart: []int{0}},
		},
		{
			name: "the first failed under OnFailure: restart it",
			pod:  testPod(inits, withRestartPolicy(v1.RestartPolicyOnFailure)), status: statusOf(ready, exited(i1, "i1", 1)),
			want: podActions{SandboxID: "s1", InitContainersToStart: []int{0}},
		},
		{
			name: "the second failed under Never: the pod fails",
			pod:  testPod(inits, withRestartPolicy(v1.RestartPolicyNever)), status: statusOf(ready, exited(i2, "i2", 3), exited(i1, "i1", 0)),
			want: podActions{KillPod: true, SandboxID: "s1"},
		},
		{
			name: "an init container in an unknown state under Never fails the pod",
			pod:  testPod(inits, withRestartPolicy(v1.RestartPolicyNever)), status: statusOf(ready, inState(i1, "i1", container.StateUnknown)),
			want: podActions{KillPod: true, SandboxID: "s1"},
		},
		{
			name: "an init container in an unknown state under Always is killed and restarted",
			pod:  testPod(inits), status: statusOf(ready, inState(i1, "i1", container.StateUnknown)),
			want: podActions{SandboxID: "s1", InitContainersToStart: []int{0}, ContainersToKill: []containerToKill{{
				ID: "i1", Name: "init1", Spec: &testPod(inits).Spec.InitContainers[0], Reason: killReasonUnknownState,
				Message: `Init container is in "unknown" state, try killing it before restart`,
			}}},
		},
		{
			name: "a created init container is started again",
			pod:  testPod(inits), status: statusOf(ready, inState(i1, "i1", container.StateCreated)),
			want: podActions{SandboxID: "s1", InitContainersToStart: []int{0}},
		},
		{
			name: "all init containers done: start the regular containers",
			pod:  testPod(inits), status: statusOf(ready, exited(i2, "i2", 0), exited(i1, "i1", 0)),
			want: podActions{SandboxID: "s1", ContainersToStart: []int{0, 1}},
		},
		{
			name: "init containers removed after initialization are not run again",
			pod:  testPod(inits), status: statusOf(ready, running(a, "ca"), running(b, "cb")),
			want: podActions{SandboxID: "s1"},
		},
		{
			name: "only exited regular containers do not prove initialization: init containers are checked",
			pod:  testPod(inits), status: statusOf(ready, exited(a, "ca", 1), exited(b, "cb", 1)),
			want: podActions{SandboxID: "s1", InitContainersToStart: []int{0}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := computePodActions(tc.pod, tc.status, nil)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("computePodActions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestComputePodActionsSidecars(t *testing.T) {
	side1, side2, i2 := sidecar("side1"), sidecar("side2"), testContainer("init2")
	a, b := testContainer("a"), testContainer("b")
	ready := []*container.SandboxStatus{readySandbox("s1", 0)}
	changedSide := side1
	changedSide.Image = "localhost/busybox:2"
	grace := int64(3)

	for _, tc := range []struct {
		name   string
		pod    *v1.Pod
		status *container.PodStatus
		probes ProbeResults
		want   podActions
	}{
		{
			name: "a started sidecar lets the next init container start",
			pod:  testPod(withInitContainers(side1, i2)), status: statusOf(ready, running(side1, "s")),
			want: podActions{SandboxID: "s1", InitContainersToStart: []int{1}},
		},
		{
			name: "a sidecar whose startup probe has not passed holds the next init container",
			pod:  testPod(withInitContainers(side1, i2)), status: statusOf(ready, running(side1, "s")),
			probes: fakeProbes{unstarted: map[string]bool{"s": true}},
			want:   podActions{SandboxID: "s1"},
		},
		{
			name: "a sidecar whose startup probe failed is killed and restarted",
			pod:  testPod(withInitContainers(side1, i2)), status: statusOf(ready, running(side1, "s")),
			probes: fakeProbes{unstarted: map[string]bool{"s": true}, failed: map[string]*int64{"s": &grace}},
			want: podActions{SandboxID: "s1", InitContainersToStart: []int{0}, ContainersToKill: []containerToKill{{
				ID: "s", Name: "side1", Spec: &side1, Reason: killReasonProbe, GracePeriod: &grace, Message: "Container failed liveness probe",
			}}},
		},
		{
			name: "sidecars start in order: the second after the first started",
			pod:  testPod(withInitContainers(side1, side2)), status: statusOf(ready, running(side1, "s")),
			want: podActions{SandboxID: "s1", InitContainersToStart: []int{1}},
		},
		{
			name: "the last sidecar started: the regular containers start",
			pod:  testPod(withInitContainers(side1, side2)), status: statusOf(ready, running(side2, "s2"), running(side1, "s")),
			want: podActions{SandboxID: "s1", ContainersToStart: []int{0, 1}},
		},
		{
			name: "an exited sidecar is restarted while the regular containers run on",
			pod:  testPod(withInitContainers(side1)), status: statusOf(ready, running(a, "ca"), running(b, "cb"), exited(side1, "s", 0)),
			want: podActions{SandboxID: "s1", InitContainersToStart: []int{0}},
		},
		{
			name: "a sidecar removed after initialization is started again",
			pod:  testPod(withInitContainers(side1, i2)), status: statusOf(ready, running(a, "ca"), running(b, "cb")),
			want: podActions{SandboxID: "s1", InitContainersToStart: []int{0}},
		},
		{
			name: "a sidecar failing its liveness probe after it started is restarted",
			pod:  testPod(withInitContainers(side1)), status: statusOf(ready, running(a, "ca"), running(b, "cb"), running(side1, "s")),
			probes: fakeProbes{failed: map[string]*int64{"s": nil}},
			want: podActions{SandboxID: "s1", InitContainersToStart: []int{0}, ContainersToKill: []containerToKill{{
				ID: "s", Name: "side1", Spec: &side1, Reason: killReasonProbe, Message: "Container failed liveness probe",
			}}},
		},
		{
			name: "a sidecar whose spec changed is replaced",
			pod:  testPod(withInitContainers(changedSide)), status: statusOf(ready, running(a, "ca"), running(b, "cb"), running(side1, "s")),
			want: podActions{SandboxID: "s1", InitContainersToStart: []int{0}, ContainersToKill: []containerToKill{{
				ID: "s", Name: "side1", Spec: &changedSide, Reason: killReasonDefinitionChanged, Message: "Init container side1 definition changed",
			}}},
		},
		{
			name:   "sidecars do not keep a finished pod alive",
			pod:    testPod(withInitContainers(side1), withRestartPolicy(v1.RestartPolicyNever)),
			status: statusOf(ready, exited(a, "ca", 0), exited(b, "cb", 0), running(side1, "s")),
			want:   podActions{KillPod: true, SandboxID: "s1"},
		},
		{
			name:   "a sidecar in an unknown state is killed and restarted, even under Never",
			pod:    testPod(withInitContainers(side1), withRestartPolicy(v1.RestartPolicyNever)),
			status: statusOf(ready, running(a, "ca"), running(b, "cb"), inState(side1, "s", container.StateUnknown)),
			want: podActions{SandboxID: "s1", InitContainersToStart: []int{0}, ContainersToKill: []containerToKill{{
				ID: "s", Name: "side1", Spec: &side1, Reason: killReasonUnknownState,
				Message: `Init container is in "unknown" state, try killing it before restart`,
			}}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := computePodActions(tc.pod, tc.status, tc.probes)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("computePodActions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestComputePodActionsEphemeralContainers(t *testing.T) {
	base := testPod()
	a, b := base.Spec.Containers[0], base.Spec.Containers[1]
	debug := testContainer("debug")
	withDebug := func(p *v1.Pod) {
		p.Spec.EphemeralContainers = []v1.EphemeralContainer{{EphemeralContainerCommon: v1.EphemeralContainerCommon(debug), TargetContainerName: "a"}}
	}
	ready := []*container.SandboxStatus{readySandbox("s1", 0)}
	init := testContainer("init")

	for _, tc := range []struct {
		name   string
		pod    *v1.Pod
		status *container.PodStatus
		want   podActions
	}{
		{
			name: "added to a running pod: started",
			pod:  testPod(withDebug), status: statusOf(ready, running(a, "ca"), running(b, "cb")),
			want: podActions{SandboxID: "s1", EphemeralContainersToStart: []int{0}},
		},
		{
			name: "running: kept, not killed as a container the spec does not name",
			pod:  testPod(withDebug), status: statusOf(ready, running(a, "ca"), running(b, "cb"), running(debug, "cd")),
			want: podActions{SandboxID: "s1"},
		},
		{
			name: "exited: never started again, whatever the restart policy",
			pod:  testPod(withDebug), status: statusOf(ready, running(a, "ca"), running(b, "cb"), exited(debug, "cd", 1)),
			want: podActions{SandboxID: "s1"},
		},
		{
			name: "started while an init container still runs",
			pod:  testPod(withDebug, withInitContainers(init)), status: statusOf(ready, running(init, "ci")),
			want: podActions{SandboxID: "s1", EphemeralContainersToStart: []int{0}},
		},
		{
			name: "a new sandbox starts without them: they ran in the old one",
			pod:  testPod(withDebug), status: statusOf(nil),
			want: podActions{KillPod: true, CreateSandbox: true, ContainersToStart: []int{0, 1}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := computePodActions(tc.pod, tc.status, nil)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("computePodActions (-want +got):\n%s", diff)
			}
		})
	}
}

func TestTargetContainerID(t *testing.T) {
	pod := testPod(func(p *v1.Pod) {
		p.Spec.EphemeralContainers = []v1.EphemeralContainer{
			{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "debug"}, TargetContainerName: "a"},
			{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "lost"}, TargetContainerName: "gone"},
			{EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: "plain"}},
		}
	})
	status := statusOf(nil, running(pod.Spec.Containers[0], "ca"))
	for name, want := range map[string]string{"debug": "ca", "plain": "", "a": ""} {
		if got, err := targetContainerID(pod, name, status); got != want || err != nil {
			t.Errorf("targetContainerID(%s) = %q, %v; want %q", name, got, err, want)
		}
	}
	if _, err := targetContainerID(pod, "lost", status); err == nil || err.Error() != "unable to find target container gone" {
		t.Errorf("targetContainerID of a missing target: %v", err)
	}
}
