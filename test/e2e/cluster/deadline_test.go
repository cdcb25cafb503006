//go:build e2e

package clustere2e

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/microlet/microlet/internal/devnode"
)

// TestActiveDeadlineUpdated: a running API pod whose activeDeadlineSeconds
// is set afterwards, as the conformance spec "Pods should allow
// activeDeadlineSeconds to be updated" does, fails with reason
// DeadlineExceeded and its container is stopped.
func TestActiveDeadlineUpdated(t *testing.T) {
	t.Parallel()
	n := startReadyNode(t)
	ns := testNamespace(t)
	ctx := context.Background()
	pods := cluster(t).Admin.CoreV1().Pods(ns)
	pod := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "deadline", Namespace: ns},
		Spec:       apiPodSpec(n, v1.Container{Name: "app", Image: devnode.DefaultTestImage, Command: []string{"sleep", "100000"}}),
	}
	if _, err := pods.Create(ctx, pod, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAPIPod(t, n, ns, "deadline", "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	current, err := pods.Get(ctx, "deadline", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deadline := int64(2)
	current.Spec.ActiveDeadlineSeconds = &deadline
	if _, err := pods.Update(ctx, current, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAPIPod(t, n, ns, "deadline", "Failed with DeadlineExceeded and its container stopped", func(p *v1.Pod) bool {
		stopped := len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].State.Terminated != nil
		return p.Status.Phase == v1.PodFailed && p.Status.Reason == "DeadlineExceeded" && stopped
	})
}
