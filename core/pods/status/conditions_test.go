package status

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/runtime/container"
)

type cond struct {
	status  v1.ConditionStatus
	reason  string
	message string
}

func checkCondition(t *testing.T, got v1.PodCondition, wantType v1.PodConditionType, want cond) {
	t.Helper()
	if got.Type != wantType || got.Status != want.status || got.Reason != want.reason || got.Message != want.message {
		t.Errorf("condition = %s %s reason=%q message=%q; want %s %s reason=%q message=%q",
			got.Type, got.Status, got.Reason, got.Message, wantType, want.status, want.reason, want.message)
	}
}

func TestContainersReadyAndReadyConditions(t *testing.T) {
	withGates := func(p *v1.Pod, gates ...v1.PodConditionType) *v1.Pod {
		for _, g := range gates {
			p.Spec.ReadinessGates = append(p.Spec.ReadinessGates, v1.PodReadinessGate{ConditionType: g})
		}
		return p
	}
	tests := []struct {
		name            string
		pod             *v1.Pod
		statuses        []v1.ContainerStatus
		conditions      []v1.PodCondition
		phase           v1.PodPhase
		containersReady cond
		ready           cond
	}{
		{"no statuses", testPod(v1.RestartPolicyAlways, nil, "a"), nil, nil, v1.PodPending,
			cond{v1.ConditionFalse, UnknownContainerStatuses, ""}, cond{v1.ConditionFalse, UnknownContainerStatuses, ""}},
		{"all ready", testPod(v1.RestartPolicyAlways, nil, "a", "b"), []v1.ContainerStatus{ready(running("a")), ready(running("b"))}, nil, v1.PodRunning,
			cond{v1.ConditionTrue, "", ""}, cond{v1.ConditionTrue, "", ""}},
		{"one unready, one unknown", testPod(v1.RestartPolicyAlways, nil, "a", "b", "c"), []v1.ContainerStatus{ready(running("a")), running("b")}, nil, v1.PodRunning,
			cond{v1.ConditionFalse, ContainersNotReady, "containers with unknown status: [c], containers with unready status: [b]"},
			cond{v1.ConditionFalse, ContainersNotReady, "containers with unknown status: [c], containers with unready status: [b]"}},
		{"sidecar unready counts, regular init does not", testPod(v1.RestartPolicyAlways, []string{"init", "sidecar:proxy"}, "a"),
			[]v1.ContainerStatus{terminated("init", 0), running("proxy"), ready(running("a"))}, nil, v1.PodRunning,
			cond{v1.ConditionFalse, ContainersNotReady, "containers with unready status: [proxy]"},
			cond{v1.ConditionFalse, ContainersNotReady, "containers with unready status: [proxy]"}},
		{"succeeded", testPod(v1.RestartPolicyNever, nil, "a"), []v1.ContainerStatus{terminated("a", 0)}, nil, v1.PodSucceeded,
			cond{v1.ConditionFalse, PodCompleted, ""}, cond{v1.ConditionFalse, PodCompleted, ""}},
		{"failed, even with a ready container", testPod(v1.RestartPolicyNever, nil, "a", "b"), []v1.ContainerStatus{ready(running("a")), terminated("b", 1)}, nil, v1.PodFailed,
			cond{v1.ConditionFalse, PodFailed, ""}, cond{v1.ConditionFalse, PodFailed, ""}},
		{"readiness gate true", withGates(testPod(v1.RestartPolicyAlways, nil, "a"), "example.com/lb"), []v1.ContainerStatus{ready(running("a"))},
			[]v1.PodCondition{{Type: "example.com/lb", Status: v1.ConditionTrue}}, v1.PodRunning,
			cond{v1.ConditionTrue, "", ""}, cond{v1.ConditionTrue, "", ""}},
		{"readiness gates missing and false", withGates(testPod(v1.RestartPolicyAlways, nil, "a"), "example.com/lb", "example.com/dns"), []v1.ContainerStatus{ready(running("a"))},
			[]v1.PodCondition{{Type: "example.com/dns", Status: v1.ConditionFalse}}, v1.PodRunning,
			cond{v1.ConditionTrue, "", ""},
			cond{v1.ConditionFalse, ReadinessGatesNotReady, `corresponding condition of pod readiness gate "example.com/lb" does not exist., the status of pod readiness gate "example.com/dns" is not "True", but False`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkCondition(t, containersReadyCondition(tt.pod, tt.statuses, tt.phase), v1.ContainersReady, tt.containersReady)
			checkCondition(t, podReadyCondition(tt.pod, tt.conditions, tt.statuses, tt.phase), v1.PodReady, tt.ready)
		})
	}
}

func TestInitializedCondition(t *testing.T) {
	tests := []struct {
		name     string
		pod      *v1.Pod
		statuses []v1.ContainerStatus
		phase    v1.PodPhase
		want     cond
	}{
		{"no init containers", testPod(v1.RestartPolicyAlways, nil, "a"), nil, v1.PodPending, cond{v1.ConditionTrue, "", ""}},
		{"init containers, no statuses", testPod(v1.RestartPolicyAlways, []string{"i"}, "a"), nil, v1.PodPending, cond{v1.ConditionFalse, UnknownContainerStatuses, ""}},
		{"init running", testPod(v1.RestartPolicyAlways, []string{"i1", "i2"}, "a"), []v1.ContainerStatus{running("i1"), waiting("a")}, v1.PodPending,
			cond{v1.ConditionFalse, ContainersNotInitialized, "containers with unknown status: [i2], containers with incomplete status: [i1]"}},
		{"inits succeeded (ready)", testPod(v1.RestartPolicyAlways, []string{"i1"}, "a"), []v1.ContainerStatus{ready(terminated("i1", 0)), waiting("a")}, v1.PodPending, cond{v1.ConditionTrue, "", ""}},
		{"sidecar running but not started", testPod(v1.RestartPolicyAlways, []string{"sidecar:proxy"}, "a"), []v1.ContainerStatus{running("proxy"), waiting("a")}, v1.PodPending,
			cond{v1.ConditionFalse, ContainersNotInitialized, "containers with incomplete status: [proxy]"}},
		{"sidecar started", testPod(v1.RestartPolicyAlways, []string{"sidecar:proxy"}, "a"), []v1.ContainerStatus{runningStarted("proxy"), waiting("a")}, v1.PodPending, cond{v1.ConditionTrue, "", ""}},
		{"sidecar restarting after a regular container ran", testPod(v1.RestartPolicyAlways, []string{"sidecar:proxy"}, "a"), []v1.ContainerStatus{waitingAfter("proxy", 1), running("a")}, v1.PodRunning, cond{v1.ConditionTrue, "", ""}},
		{"succeeded", testPod(v1.RestartPolicyNever, []string{"i"}, "a"), []v1.ContainerStatus{terminated("i", 0), terminated("a", 0)}, v1.PodSucceeded, cond{v1.ConditionTrue, PodCompleted, ""}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkCondition(t, initializedCondition(tt.pod, tt.statuses, tt.phase), v1.PodInitialized, tt.want)
		})
	}
}

func TestReadyToStartContainersCondition(t *testing.T) {
	sandbox := func(id string, state container.SandboxState, hostNetwork bool, ips ...string) *container.SandboxStatus {
		return &container.SandboxStatus{ID: id, State: state, HostNetwork: hostNetwork, IPs: ips}
	}
	hostNetworkPod := testPod(v1.RestartPolicyAlways, nil, "a")
	hostNetworkPod.Spec.HostNetwork = true
	tests := []struct {
		name      string
		pod       *v1.Pod
		sandboxes []*container.SandboxStatus
		want      v1.ConditionStatus
	}{
		{"no sandbox", testPod(v1.RestartPolicyAlways, nil, "a"), nil, v1.ConditionFalse},
		{"ready with an IP", testPod(v1.RestartPolicyAlways, nil, "a"), []*container.SandboxStatus{sandbox("s1", container.SandboxReady, false, "10.0.0.2")}, v1.ConditionTrue},
		{"ready without an IP", testPod(v1.RestartPolicyAlways, nil, "a"), []*container.SandboxStatus{sandbox("s1", container.SandboxReady, false)}, v1.ConditionFalse},
		{"host network needs no IP", hostNetworkPod, []*container.SandboxStatus{sandbox("s1", container.SandboxReady, true)}, v1.ConditionTrue},
		{"network mode changed", hostNetworkPod, []*container.SandboxStatus{sandbox("s1", container.SandboxReady, false, "10.0.0.2")}, v1.ConditionFalse},
		{"newest not ready", testPod(v1.RestartPolicyAlways, nil, "a"), []*container.SandboxStatus{sandbox("s2", container.SandboxNotReady, false), sandbox("s1", container.SandboxReady, false, "10.0.0.2")}, v1.ConditionFalse},
		{"two ready", testPod(v1.RestartPolicyAlways, nil, "a"), []*container.SandboxStatus{sandbox("s2", container.SandboxReady, false, "10.0.0.3"), sandbox("s1", container.SandboxReady, false, "10.0.0.2")}, v1.ConditionFalse},
		{"old one stopped", testPod(v1.RestartPolicyAlways, nil, "a"), []*container.SandboxStatus{sandbox("s2", container.SandboxReady, false, "10.0.0.3"), sandbox("s1", container.SandboxNotReady, false)}, v1.ConditionTrue},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := readyToStartContainersCondition(tt.pod, &container.PodStatus{Sandboxes: tt.sandboxes})
			checkCondition(t, got, v1.PodReadyToStartContainers, cond{tt.want, "", ""})
		})
	}
}
