package status

import (
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/microlet/microlet/core/pods/podspec"
	"github.com/microlet/microlet/core/runtime/container"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func at(seconds int) time.Time { return t0.Add(time.Duration(seconds) * time.Second) }

var always = v1.ContainerRestartPolicyAlways

// testPod is a pod with regular containers, init containers ("sidecar:"
// prefixed names are sidecars) and a restart policy.
func testPod(policy v1.RestartPolicy, inits []string, containers ...string) *v1.Pod {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{UID: "uid-1", Name: "web", Namespace: "default"},
		Spec:       v1.PodSpec{RestartPolicy: policy},
	}
	for _, name := range inits {
		c := v1.Container{Name: name, Image: "img-" + name}
		if len(name) > 8 && name[:8] == "sidecar:" {
			c.Name = name[8:]
			c.RestartPolicy = &always
		}
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
	}
	for _, name := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: name, Image: "img-" + name})
	}
	return pod
}

func static(pod *v1.Pod) *v1.Pod {
	pod.Annotations = map[string]string{podspec.ConfigSourceAnnotationKey: "file"}
	return pod
}

// API container status builders.
func running(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}
}

func runningStarted(name string) v1.ContainerStatus {
	s := running(name)
	started := true
	s.Started = &started
	return s
}

func waiting(name string) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{}}}
}

func waitingAfter(name string, exitCode int32) v1.ContainerStatus {
	s := waiting(name)
	s.LastTerminationState.Terminated = &v1.ContainerStateTerminated{ExitCode: exitCode}
	return s
}

func terminated(name string, exitCode int32) v1.ContainerStatus {
	return v1.ContainerStatus{Name: name, State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: exitCode}}}
}

func ready(s v1.ContainerStatus) v1.ContainerStatus {
	s.Ready = true
	return s
}

// runtimeStatus builds a runtime status with a ready sandbox "sb" (IPs
// given) and container instances.
func runtimeStatus(ips []string, instances ...*container.ContainerStatus) *container.PodStatus {
	return &container.PodStatus{
		UID:        "uid-1",
		Sandboxes:  []*container.SandboxStatus{{ID: "sb", State: container.SandboxReady, IPs: ips}},
		Containers: instances,
	}
}

func instance(id, name string, state container.State, created int) *container.ContainerStatus {
	c := &container.ContainerStatus{
		ID: id, Name: name, SandboxID: "sb", State: state,
		CreatedAt: at(created), StartedAt: at(created + 1),
		Image: "img-" + name, ImageRef: "sha256:" + name,
	}
	if state == container.StateExited {
		c.FinishedAt = at(created + 2)
	}
	return c
}

func exited(id, name string, created int, exitCode int32, reason string) *container.ContainerStatus {
	c := instance(id, name, container.StateExited, created)
	c.ExitCode, c.Reason = exitCode, reason
	return c
}

// probeResults maps CRI container IDs to probe verdicts.
type probeResults map[string]bool

func (p probeResults) Result(id string) (bool, bool) {
	v, ok := p[id]
	return v, ok
}
