package podruntime

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/microlet/microlet/core/runtime/container"
)

func TestContainerHash(t *testing.T) {
	c := testContainer("a")
	// A golden value: changing the hash restarts every container on the
	// node after an upgrade of microlet.
	if got := containerHash(&c); got != 0x24fe4bad {
		t.Errorf("containerHash = %#x; changing it restarts every running container", got)
	}
	// What microlet wrote before it used upstream's hash: its containers
	// are not replaced after an upgrade.
	if got := previousContainerHash(&c); got != 0x5fc97d9 {
		t.Errorf("previousContainerHash = %#x, the hash earlier microlets wrote is 0x5fc97d9", got)
	}
	if containerChanged(&c, &container.ContainerStatus{Hash: 0x5fc97d9}) {
		t.Error("a container of an earlier microlet counts as changed")
	}
	changed := c
	changed.Env = []v1.EnvVar{{Name: "X", Value: "1"}}
	changed.Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1")}
	if containerHash(&changed) != containerHash(&c) {
		t.Error("fields besides name and image changed the hash")
	}
	changed.Image = "localhost/busybox:2"
	if containerHash(&changed) == containerHash(&c) {
		t.Error("a new image did not change the hash")
	}
}

func TestShouldContainerBeRestarted(t *testing.T) {
	c := testContainer("a")
	for _, tc := range []struct {
		name   string
		policy v1.RestartPolicy
		status *container.ContainerStatus
		delete bool
		want   bool
	}{
		{name: "never ran", policy: v1.RestartPolicyNever, want: true},
		{name: "running", policy: v1.RestartPolicyAlways, status: running(c, "x"), want: false},
		{name: "unknown", policy: v1.RestartPolicyNever, status: inState(c, "x", container.StateUnknown), want: true},
		{name: "created", policy: v1.RestartPolicyNever, status: inState(c, "x", container.StateCreated), want: true},
		{name: "Always, exited 0", policy: v1.RestartPolicyAlways, status: exited(c, "x", 0), want: true},
		{name: "OnFailure, exited 0", policy: v1.RestartPolicyOnFailure, status: exited(c, "x", 0), want: false},
		{name: "OnFailure, exited 137", policy: v1.RestartPolicyOnFailure, status: exited(c, "x", 137), want: true},
		{name: "Never, exited 1", policy: v1.RestartPolicyNever, status: exited(c, "x", 1), want: false},
		{name: "pod being deleted", policy: v1.RestartPolicyAlways, status: exited(c, "x", 1), delete: true, want: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := testPod(withRestartPolicy(tc.policy))
			if tc.delete {
				now := metav1.Now()
				pod.DeletionTimestamp = &now
			}
			var status *container.PodStatus
			if tc.status != nil {
				status = statusOf(nil, tc.status)
			} else {
				status = statusOf(nil)
			}
			if got := shouldContainerBeRestarted(&c, pod, status); got != tc.want {
				t.Errorf("shouldContainerBeRestarted = %v, want %v", got, tc.want)
			}
		})
	}
}
