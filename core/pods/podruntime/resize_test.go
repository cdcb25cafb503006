package podruntime

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/runtime/container"
)

// fakeTracker holds actuated resources by container name.
type fakeTracker map[string]v1.ResourceRequirements

func (f fakeTracker) Actuated(_ types.UID, name string) (v1.ResourceRequirements, bool) {
	r, ok := f[name]
	return r, ok
}
func (f fakeTracker) SetActuated(_ types.UID, name string, r v1.ResourceRequirements) { f[name] = r }
func (f fakeTracker) SetError(types.UID, int64, string)                               {}
func (f fakeTracker) ClearError(types.UID)                                            {}

func limits(cpu, mem string) v1.ResourceRequirements {
	l := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)}
	return v1.ResourceRequirements{Requests: l, Limits: l}
}

func TestComputeResizeActions(t *testing.T) {
	restartOnMemory := []v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}}
	for _, tc := range []struct {
		name       string
		pod        func(*v1.Pod)
		actuated   fakeTracker
		status     func(p *v1.Pod) *container.PodStatus
		wantResize []string
		wantKill   []string
		wantStart  []int
	}{
		{name: "nothing changed", actuated: fakeTracker{"a": limits("1", "1Gi"), "b": limits("1", "1Gi")}},
		{name: "cpu of one container, in place", pod: func(p *v1.Pod) { p.Spec.Containers[1].Resources = limits("2", "1Gi") },
			actuated: fakeTracker{"a": limits("1", "1Gi"), "b": limits("1", "1Gi")}, wantResize: []string{"b"}},
		{name: "memory with RestartContainer restarts", pod: func(p *v1.Pod) {
			p.Spec.Containers[0].Resources = limits("1", "2Gi")
			p.Spec.Containers[0].ResizePolicy = restartOnMemory
		}, actuated: fakeTracker{"a": limits("1", "1Gi"), "b": limits("1", "1Gi")}, wantKill: []string{"a"}, wantStart: []int{0}},
		{name: "cpu with a memory RestartContainer policy stays in place", pod: func(p *v1.Pod) {
			p.Spec.Containers[0].Resources = limits("2", "1Gi")
			p.Spec.Containers[0].ResizePolicy = restartOnMemory
		}, actuated: fakeTracker{"a": limits("1", "1Gi"), "b": limits("1", "1Gi")}, wantResize: []string{"a"}},
		{name: "unknown actuation is updated in place, never restarted", pod: func(p *v1.Pod) { p.Spec.Containers[0].ResizePolicy = restartOnMemory },
			actuated: fakeTracker{"b": limits("1", "1Gi")}, wantResize: []string{"a"}},
		{name: "a container not running waits for its start", pod: func(p *v1.Pod) { p.Spec.Containers[1].Resources = limits("2", "1Gi") },
			actuated: fakeTracker{"a": limits("1", "1Gi"), "b": limits("1", "1Gi")},
			status: func(p *v1.Pod) *container.PodStatus {
				return statusOf([]*container.SandboxStatus{readySandbox("s1", 0)}, running(p.Spec.Containers[0], "c-a"), exited(p.Spec.Containers[1], "c-b", 1))
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod(func(p *v1.Pod) {
				for i := range p.Spec.Containers {
					p.Spec.Containers[i].Resources = limits("1", "1Gi")
				}
			})
			if tc.pod != nil {
				tc.pod(pod)
			}
			status := statusOf([]*container.SandboxStatus{readySandbox("s1", 0)}, running(pod.Spec.Containers[0], "c-a"), running(pod.Spec.Containers[1], "c-b"))
			if tc.status != nil {
				status = tc.status(pod)
			}
			actions := podActions{SandboxID: "s1"}
			got := computeResizeActions(pod, status, tc.actuated, &actions)
			var names []string
			for _, r := range got {
				names = append(names, r.spec.Name)
			}
			var killed []string
			for _, k := range actions.ContainersToKill {
				killed = append(killed, k.Name)
				if k.Message != "Container "+k.Name+" resize requires restart" {
					t.Errorf("kill message %q", k.Message)
				}
			}
			if !slices.Equal(names, tc.wantResize) || !slices.Equal(killed, tc.wantKill) || !slices.Equal(actions.ContainersToStart, tc.wantStart) {
				t.Errorf("resize %v kill %v start %v; want %v %v %v", names, killed, actions.ContainersToStart, tc.wantResize, tc.wantKill, tc.wantStart)
			}
		})
	}
}
