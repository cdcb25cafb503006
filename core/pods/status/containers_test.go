package status

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/microlet/microlet/core/runtime/container"
)

func mt(seconds int) metav1.Time { return metav1.NewTime(at(seconds)) }

func TestContainerStatuses(t *testing.T) {
	deleted := func(p *v1.Pod) *v1.Pod {
		now := metav1.NewTime(t0)
		p.DeletionTimestamp = &now
		return p
	}
	unknown := func(id, name string, created int) *container.ContainerStatus {
		c := instance(id, name, container.StateUnknown, created)
		return c
	}
	tests := []struct {
		name      string
		pod       *v1.Pod
		instances []*container.ContainerStatus
		old       []v1.ContainerStatus
		reasons   map[string]Reason
		init      bool // convert the init containers instead
		want      []v1.ContainerStatus
	}{
		{
			name: "no instance yet",
			pod:  testPod(v1.RestartPolicyAlways, nil, "b", "a"),
			want: []v1.ContainerStatus{
				{Name: "a", Image: "img-a", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: ContainerCreating}}},
				{Name: "b", Image: "img-b", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: ContainerCreating}}},
			},
		},
		{
			name: "no instance yet, pod with init containers",
			pod:  testPod(v1.RestartPolicyAlways, []string{"i"}, "a"),
			want: []v1.ContainerStatus{{Name: "a", Image: "img-a", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: PodInitializing}}}},
		},
		{
			name:      "running",
			pod:       testPod(v1.RestartPolicyAlways, nil, "a"),
			instances: []*container.ContainerStatus{instance("c1", "a", container.StateRunning, 10)},
			want: []v1.ContainerStatus{{
				Name: "a", Image: "img-a", ImageID: "sha256:a", ContainerID: "containerd://c1",
				State:     v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: mt(11)}},
				Resources: &v1.ResourceRequirements{},
			}},
		},
		{
			name:      "created but not started is waiting",
			pod:       testPod(v1.RestartPolicyAlways, nil, "a"),
			instances: []*container.ContainerStatus{instance("c1", "a", container.StateCreated, 10)},
			want: []v1.ContainerStatus{{
				Name: "a", Image: "img-a", ImageID: "sha256:a", ContainerID: "containerd://c1",
				State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{}}, Resources: &v1.ResourceRequirements{},
			}},
		},
		{
			name: "restarted: the previous instance is the last state, older ones are ignored",
			pod:  testPod(v1.RestartPolicyAlways, nil, "a"),
			instances: []*container.ContainerStatus{
				exited("c1", "a", 10, 1, "Error"),
				func() *container.ContainerStatus {
					c := instance("c3", "a", container.StateRunning, 30)
					c.RestartCount = 2
					return c
				}(),
				exited("c2", "a", 20, 137, "OOMKilled"),
			},
			want: []v1.ContainerStatus{{
				Name: "a", Image: "img-a", ImageID: "sha256:a", ContainerID: "containerd://c3", RestartCount: 2,
				State: v1.ContainerState{Running: &v1.ContainerStateRunning{StartedAt: mt(31)}},
				LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
					ExitCode: 137, Reason: "OOMKilled", StartedAt: mt(21), FinishedAt: mt(22), ContainerID: "containerd://c2",
				}},
				Resources: &v1.ResourceRequirements{},
			}},
		},
		{
			name:      "crashed and backing off: waiting with the reason, the crash as last state",
			pod:       testPod(v1.RestartPolicyAlways, nil, "a"),
			instances: []*container.ContainerStatus{exited("c1", "a", 10, 1, "Error")},
			reasons:   map[string]Reason{"a": {"CrashLoopBackOff", "back-off 10s restarting failed container=a pod=web_default(uid-1)"}},
			want: []v1.ContainerStatus{{
				Name: "a", Image: "img-a", ImageID: "sha256:a", ContainerID: "containerd://c1",
				State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CrashLoopBackOff", Message: "back-off 10s restarting failed container=a pod=web_default(uid-1)"}},
				LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
					ExitCode: 1, Reason: "Error", StartedAt: mt(11), FinishedAt: mt(12), ContainerID: "containerd://c1",
				}},
				Resources: &v1.ResourceRequirements{},
			}},
		},
		{
			name:    "image pull failing before any instance",
			pod:     testPod(v1.RestartPolicyAlways, nil, "a"),
			reasons: map[string]Reason{"a": {"ErrImagePull", "pull failed"}},
			want:    []v1.ContainerStatus{{Name: "a", Image: "img-a", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "pull failed"}}}},
		},
		{
			name:      "Never: a failed container is not restarted, the reason is ignored",
			pod:       testPod(v1.RestartPolicyNever, nil, "a"),
			instances: []*container.ContainerStatus{exited("c1", "a", 10, 1, "Error")},
			reasons:   map[string]Reason{"a": {"CrashLoopBackOff", "ignored"}},
			want: []v1.ContainerStatus{{
				Name: "a", Image: "img-a", ImageID: "sha256:a", ContainerID: "containerd://c1",
				State:     v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 1, Reason: "Error", StartedAt: mt(11), FinishedAt: mt(12), ContainerID: "containerd://c1"}},
				Resources: &v1.ResourceRequirements{},
			}},
		},
		{
			name:      "succeeded init container is not restarted",
			pod:       testPod(v1.RestartPolicyAlways, []string{"i2", "i1"}),
			instances: []*container.ContainerStatus{exited("c1", "i1", 10, 0, "Completed")},
			reasons:   map[string]Reason{"i1": {"CrashLoopBackOff", "ignored"}, "i2": {"CreateContainerConfigError", "bad env"}},
			init:      true,
			want: []v1.ContainerStatus{
				{Name: "i2", Image: "img-i2", State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: "CreateContainerConfigError", Message: "bad env"}}},
				{
					Name: "i1", Image: "img-i1", ImageID: "sha256:i1", ContainerID: "containerd://c1",
					State:     v1.ContainerState{Terminated: &v1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed", StartedAt: mt(11), FinishedAt: mt(12), ContainerID: "containerd://c1"}},
					Resources: &v1.ResourceRequirements{},
				},
			},
		},
		{
			name: "vanished while running: terminated unknown as last state, one more restart",
			pod:  testPod(v1.RestartPolicyAlways, nil, "a"),
			old:  []v1.ContainerStatus{{Name: "a", RestartCount: 3, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}},
			want: []v1.ContainerStatus{{
				Name: "a", Image: "img-a", RestartCount: 4,
				State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: ContainerCreating}},
				LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
					Reason: ContainerStatusUnknown, Message: "The container could not be located when the pod was deleted.  The container used to be Running", ExitCode: 137,
				}},
			}},
		},
		{
			name: "vanished while running from a deleted pod: no extra restart",
			pod:  deleted(testPod(v1.RestartPolicyAlways, nil, "a")),
			old:  []v1.ContainerStatus{{Name: "a", RestartCount: 3, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}},
			want: []v1.ContainerStatus{{
				Name: "a", Image: "img-a", RestartCount: 3,
				State: v1.ContainerState{Waiting: &v1.ContainerStateWaiting{Reason: ContainerCreating}},
				LastTerminationState: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
					Reason: ContainerStatusUnknown, Message: "The container could not be located when the pod was deleted.  The container used to be Running", ExitCode: 137,
				}},
			}},
		},
		{
			name:      "state unknown after running: terminated unknown",
			pod:       testPod(v1.RestartPolicyNever, nil, "a"),
			instances: []*container.ContainerStatus{unknown("c1", "a", 10)},
			old:       []v1.ContainerStatus{{Name: "a", RestartCount: 1, State: v1.ContainerState{Running: &v1.ContainerStateRunning{}}}},
			want: []v1.ContainerStatus{{
				Name: "a", Image: "img-a", ImageID: "sha256:a", ContainerID: "containerd://c1", RestartCount: 2,
				State: v1.ContainerState{Terminated: &v1.ContainerStateTerminated{
					Reason: ContainerStatusUnknown, Message: "The container could not be located when the pod was terminated", ExitCode: 137,
				}},
				Resources: &v1.ResourceRequirements{},
			}},
		},
		{
			name: "a terminated status is kept when the instance is gone",
			pod:  testPod(v1.RestartPolicyNever, nil, "a"),
			old:  []v1.ContainerStatus{terminated("a", 2)},
			want: []v1.ContainerStatus{terminated("a", 2)},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := &Generator{RuntimeName: "containerd", Reasons: NewReasonCache()}
			for name, r := range tt.reasons {
				g.Reasons.Add(tt.pod.UID, name, r.Reason, r.Message)
			}
			runtime := runtimeStatus(nil, tt.instances...)
			containers, hasInit := tt.pod.Spec.Containers, len(tt.pod.Spec.InitContainers) > 0
			if tt.init {
				containers = tt.pod.Spec.InitContainers
			}
			got := g.containerStatuses(tt.pod, runtime, tt.old, containers, hasInit, tt.init)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("container statuses (-want +got):\n%s", diff)
			}
		})
	}
}

func TestVolumeMountStatuses(t *testing.T) {
	ifPossible, enabled := v1.RecursiveReadOnlyIfPossible, v1.RecursiveReadOnlyEnabled
	disabled := v1.RecursiveReadOnlyDisabled
	c := &v1.Container{VolumeMounts: []v1.VolumeMount{
		{Name: "rw", MountPath: "/rw"},
		{Name: "ro", MountPath: "/ro", ReadOnly: true},
		{Name: "rro", MountPath: "/rro", ReadOnly: true, RecursiveReadOnly: &ifPossible},
		{Name: "rro-required", MountPath: "/rro2", ReadOnly: true, RecursiveReadOnly: &enabled},
	}}
	for _, supported := range []bool{false, true} {
		rro := disabled
		if supported {
			rro = enabled
		}
		want := []v1.VolumeMountStatus{
			{Name: "rw", MountPath: "/rw"},
			{Name: "ro", MountPath: "/ro", ReadOnly: true, RecursiveReadOnly: &disabled},
			{Name: "rro", MountPath: "/rro", ReadOnly: true, RecursiveReadOnly: &rro},
			{Name: "rro-required", MountPath: "/rro2", ReadOnly: true, RecursiveReadOnly: &rro},
		}
		got := (&Generator{SupportsRecursiveReadOnly: supported}).volumeMountStatuses(c)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("runtime supports recursive read-only = %v (-want +got):\n%s", supported, diff)
		}
	}
}
