package probes

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/microlet/microlet/core/pods/podspec"
	"github.com/microlet/microlet/core/runtime/container"
)

var containerStart = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

// httpReadiness is a readiness probe of path /ready on the port named web.
func httpReadiness() *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{HTTPGet: &v1.HTTPGetAction{Path: "/ready", Port: intstr.FromString("web")}}}
}

func execProbe(command ...string) *v1.Probe {
	return &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: command}}}
}

// newPod is pod default/web with the containers given, defaulted as the
// pod sources hand pods to the core.
func newPod(uid string, containers ...v1.Container) *v1.Pod {
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", UID: types.UID("uid-" + uid)},
		Spec:       v1.PodSpec{Containers: containers},
	}
	podspec.SetDefaults(pod)
	return pod
}

// runtimeOf is the runtime status of pod with one running instance of each
// named container, ID "<name>-1", and the pod IP 10.88.0.5.
func runtimeOf(pod *v1.Pod, running ...string) *container.PodStatus {
	st := &container.PodStatus{UID: pod.UID, Name: pod.Name, Namespace: pod.Namespace,
		Sandboxes: []*container.SandboxStatus{{ID: "sandbox", State: container.SandboxReady, IPs: []string{"10.88.0.5"}}}}
	for _, name := range running {
		st.Containers = append(st.Containers, &container.ContainerStatus{ID: name + "-1", Name: name, State: container.StateRunning, StartedAt: containerStart})
	}
	return st
}

func newManager(t *testing.T, opts Options) *Manager {
	t.Helper()
	m, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
