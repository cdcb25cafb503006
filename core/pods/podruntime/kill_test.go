package podruntime

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/runtime/container"
)

func TestMayRunPreStop(t *testing.T) {
	withPreStop := func(name string) func(*v1.Pod) {
		return func(pod *v1.Pod) {
			for i := range pod.Spec.Containers {
				if pod.Spec.Containers[i].Name == name {
					pod.Spec.Containers[i].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
				}
			}
		}
	}
	runtimePod := func(containers ...*container.Container) *container.Pod {
		return &container.Pod{UID: "uid-1", Name: "web", Namespace: "default", Containers: containers}
	}
	running := func(name string) *container.Container {
		return &container.Container{ID: "id-" + name, Name: name, State: container.StateRunning}
	}
	exited := func(name string) *container.Container {
		return &container.Container{ID: "id-" + name, Name: name, State: container.StateExited}
	}
	unknown := func(name string) *container.Container {
		return &container.Container{ID: "id-" + name, Name: name, State: container.StateUnknown}
	}
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		runtime *container.Pod
		want    bool
	}{
		{"no hooks", testPod(), runtimePod(running("a"), running("b")), false},
		{"a running container with a hook", testPod(withPreStop("b")), runtimePod(running("a"), running("b")), true},
		{"the container with a hook has exited", testPod(withPreStop("b")), runtimePod(running("a"), exited("b")), false},
		{"the container with a hook is in an unknown state", testPod(withPreStop("b")), runtimePod(running("a"), unknown("b")), true},
		{"a running container the spec does not name", testPod(), runtimePod(running("a"), running("gone")), true},
		{"an orphan", nil, runtimePod(running("a")), true},
		{"an orphan with nothing running", nil, runtimePod(exited("a")), false},
		{"a sidecar with a hook", testPod(withInitContainers(func() v1.Container {
			c := sidecar("s")
			c.Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
			return c
		}())), runtimePod(running("a"), running("s")), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := mayRunPreStop(tc.pod, tc.runtime); got != tc.want {
				t.Errorf("mayRunPreStop = %v, want %v", got, tc.want)
			}
		})
	}
}
