package status

import (
	"testing"

	v1 "k8s.io/api/core/v1"
)

func TestGetPhase(t *testing.T) {
	tests := []struct {
		name        string
		pod         *v1.Pod
		statuses    []v1.ContainerStatus
		terminal    bool
		initialized bool
		want        v1.PodPhase
	}{
		{"all running", testPod(v1.RestartPolicyAlways, nil, "a", "b"), []v1.ContainerStatus{running("a"), running("b")}, false, false, v1.PodRunning},
		{"one waiting to run", testPod(v1.RestartPolicyAlways, nil, "a", "b"), []v1.ContainerStatus{running("a"), waiting("b")}, false, false, v1.PodPending},
		{"one unknown", testPod(v1.RestartPolicyAlways, nil, "a", "b"), []v1.ContainerStatus{running("a")}, false, false, v1.PodPending},
		{"no statuses", testPod(v1.RestartPolicyAlways, nil, "a"), nil, false, false, v1.PodPending},
		{"restarting after a crash", testPod(v1.RestartPolicyAlways, nil, "a", "b"), []v1.ContainerStatus{running("a"), waitingAfter("b", 1)}, false, false, v1.PodRunning},

		{"Always: all stopped is restarting", testPod(v1.RestartPolicyAlways, nil, "a"), []v1.ContainerStatus{terminated("a", 0)}, false, false, v1.PodRunning},
		{"OnFailure: all succeeded", testPod(v1.RestartPolicyOnFailure, nil, "a", "b"), []v1.ContainerStatus{terminated("a", 0), terminated("b", 0)}, false, false, v1.PodSucceeded},
		{"OnFailure: one failed is restarting", testPod(v1.RestartPolicyOnFailure, nil, "a", "b"), []v1.ContainerStatus{terminated("a", 0), terminated("b", 2)}, false, false, v1.PodRunning},
		{"Never: all succeeded", testPod(v1.RestartPolicyNever, nil, "a"), []v1.ContainerStatus{terminated("a", 0)}, false, false, v1.PodSucceeded},
		{"Never: one failed", testPod(v1.RestartPolicyNever, nil, "a", "b"), []v1.ContainerStatus{terminated("a", 0), terminated("b", 1)}, false, false, v1.PodFailed},
		{"Never: one still running", testPod(v1.RestartPolicyNever, nil, "a", "b"), []v1.ContainerStatus{running("a"), terminated("b", 1)}, false, false, v1.PodRunning},

		{"terminal pod, Always, all succeeded", testPod(v1.RestartPolicyAlways, nil, "a"), []v1.ContainerStatus{terminated("a", 0)}, true, false, v1.PodSucceeded},
		{"terminal pod, Always, one failed", testPod(v1.RestartPolicyAlways, nil, "a", "b"), []v1.ContainerStatus{terminated("a", 0), terminated("b", 137)}, true, false, v1.PodFailed},
		{"terminal static pod keeps its restart policy's phase", static(testPod(v1.RestartPolicyAlways, nil, "a")), []v1.ContainerStatus{terminated("a", 0)}, true, false, v1.PodRunning},

		{"init running", testPod(v1.RestartPolicyAlways, []string{"init"}, "a"), []v1.ContainerStatus{running("init"), waiting("a")}, false, false, v1.PodPending},
		{"init not seen yet", testPod(v1.RestartPolicyAlways, []string{"init"}, "a"), []v1.ContainerStatus{waiting("a")}, false, false, v1.PodPending},
		{"init failed, Never", testPod(v1.RestartPolicyNever, []string{"init"}, "a"), []v1.ContainerStatus{terminated("init", 1), waiting("a")}, false, false, v1.PodFailed},
		{"init failed, waiting to retry, Never", testPod(v1.RestartPolicyNever, []string{"init"}, "a"), []v1.ContainerStatus{waitingAfter("init", 1), waiting("a")}, false, false, v1.PodFailed},
		{"init failed, OnFailure retries", testPod(v1.RestartPolicyOnFailure, []string{"init"}, "a"), []v1.ContainerStatus{waitingAfter("init", 1), waiting("a")}, false, false, v1.PodPending},
		{"init succeeded, waiting to retry a later one", testPod(v1.RestartPolicyAlways, []string{"i1", "i2"}, "a"), []v1.ContainerStatus{terminated("i1", 0), waiting("i2"), waiting("a")}, false, false, v1.PodPending},
		{"inits done, main running", testPod(v1.RestartPolicyAlways, []string{"i1", "i2"}, "a"), []v1.ContainerStatus{terminated("i1", 0), terminated("i2", 0), running("a")}, false, false, v1.PodRunning},

		{"sidecar running, not started yet", testPod(v1.RestartPolicyAlways, []string{"sidecar:proxy"}, "a"), []v1.ContainerStatus{running("proxy"), waiting("a")}, false, false, v1.PodPending},
		{"sidecar restarting after the pod initialized", testPod(v1.RestartPolicyAlways, []string{"sidecar:proxy"}, "a"), []v1.ContainerStatus{running("proxy"), running("a")}, false, true, v1.PodRunning},
		{"sidecar started, main running", testPod(v1.RestartPolicyAlways, []string{"sidecar:proxy"}, "a"), []v1.ContainerStatus{runningStarted("proxy"), running("a")}, false, false, v1.PodRunning},
		{"sidecar not seen yet", testPod(v1.RestartPolicyAlways, []string{"sidecar:proxy"}, "a"), []v1.ContainerStatus{running("a")}, false, false, v1.PodPending},
		{"sidecar waiting for the first time", testPod(v1.RestartPolicyAlways, []string{"sidecar:proxy"}, "a"), []v1.ContainerStatus{waiting("proxy"), waiting("a")}, false, false, v1.PodPending},
		{"sidecar crashed and waits, main running", testPod(v1.RestartPolicyAlways, []string{"sidecar:proxy"}, "a"), []v1.ContainerStatus{waitingAfter("proxy", 1), running("a")}, false, true, v1.PodRunning},
		{"sidecar still running after main completed", testPod(v1.RestartPolicyOnFailure, []string{"sidecar:proxy"}, "a"), []v1.ContainerStatus{runningStarted("proxy"), terminated("a", 0)}, false, true, v1.PodRunning},
		{"sidecar stopped after main completed", testPod(v1.RestartPolicyOnFailure, []string{"sidecar:proxy"}, "a"), []v1.ContainerStatus{terminated("proxy", 137), terminated("a", 0)}, false, true, v1.PodSucceeded},
		{"sidecar stopped after main failed, Never", testPod(v1.RestartPolicyNever, []string{"sidecar:proxy"}, "a"), []v1.ContainerStatus{terminated("proxy", 0), terminated("a", 3)}, false, true, v1.PodFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := getPhase(tt.pod, tt.statuses, tt.terminal, tt.initialized); got != tt.want {
				t.Errorf("getPhase = %s; want %s", got, tt.want)
			}
		})
	}
}
