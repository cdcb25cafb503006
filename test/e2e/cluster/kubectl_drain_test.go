//go:build e2e

package clustere2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/microlet/microlet/internal/devnode"
)

// TestKubectlCordonDrainDeleteNode: kubectl cordon keeps new pods off the
// node and uncordon lets them on; kubectl drain evicts the node's pods
// through the eviction API, stopping where a PodDisruptionBudget forbids
// and going on once it allows, each pod getting SIGTERM and ending within
// its grace; kubectl delete node of the running node: it registers again.
func TestKubectlCordonDrainDeleteNode(t *testing.T) {
	t.Parallel()
	n := startReadyNode(t)
	ns := testNamespace(t)
	ctx := context.Background()
	admin := cluster(t).Admin

	kubectl(t, "cordon", n.Name)
	if !apiNode(t, n).Spec.Unschedulable {
		t.Fatalf("kubectl cordon: the Node is schedulable")
	}
	late := apiPodSpec(n, v1.Container{Name: "app", Image: devnode.DefaultTestImage, Command: []string{"sh", "-c", untilTerm}})
	if _, err := admin.CoreV1().Pods(ns).Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "late"}, Spec: late}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAPIPod(t, n, ns, "late", "left unscheduled on the cordoned node", func(p *v1.Pod) bool {
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled && c.Status == v1.ConditionFalse && c.Reason == v1.PodReasonUnschedulable {
				return true
			}
		}
		return false
	})
	kubectl(t, "uncordon", n.Name)
	waitAPIPod(t, n, ns, "late", "Running once the node is uncordoned", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	kubectl(t, "delete", "pod", "-n", ns, "late")

	// Three pods a budget lets one of go at a time.
	marks := t.TempDir()
	labels := map[string]string{"app": "guarded"}
	for i := range 3 {
		spec := apiPodSpec(n, v1.Container{Name: "app", Image: devnode.DefaultTestImage, Command: []string{"sh", "-c", untilTerm},
			VolumeMounts: []v1.VolumeMount{{Name: "marks", MountPath: "/marks"}}},
			v1.Volume{Name: "marks", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: marks}}})
		pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("guarded-%d", i), Labels: labels}, Spec: spec}
		if _, err := admin.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	minAvailable := intstr.FromInt32(2)
	pdb := &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Name: "guard"}, Spec: policyv1.PodDisruptionBudgetSpec{
		MinAvailable: &minAvailable, Selector: &metav1.LabelSelector{MatchLabels: labels}}}
	if _, err := admin.PolicyV1().PodDisruptionBudgets(ns).Create(ctx, pdb, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.Eventually("the disruption controller to allow one disruption", func() (bool, string) {
		got, err := admin.PolicyV1().PodDisruptionBudgets(ns).Get(ctx, "guard", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return got.Status.DisruptionsAllowed == 1 && got.Status.CurrentHealthy == 3, fmt.Sprintf("%+v", got.Status)
	})

	r := kubectlResult(t, kubectlOptions{}, "drain", n.Name, "--force", "--timeout=20s")
	if r.Code == 0 || !strings.Contains(r.Stdout+r.Stderr, "Cannot evict pod as it would violate the pod's disruption budget") {
		t.Fatalf("kubectl drain under a budget allowing one eviction of three: code %d\n%s%s\nwant a failure naming the budget", r.Code, r.Stdout, r.Stderr)
	}
	if left := podNames(t, ns); len(left) != 2 {
		t.Fatalf("after a drain the budget stopped: pods %v, want 2 of 3 left", left)
	}
	if !apiNode(t, n).Spec.Unschedulable {
		t.Errorf("kubectl drain left the Node schedulable")
	}

	// The budget relaxed, the drain goes through.
	patch := []byte(`{"spec":{"minAvailable":0}}`)
	if _, err := admin.PolicyV1().PodDisruptionBudgets(ns).Patch(ctx, "guard", types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	if r := kubectlResult(t, kubectlOptions{}, "drain", n.Name, "--force", "--timeout=90s"); r.Code != 0 {
		t.Fatalf("kubectl drain once the budget allows it: code %d\n%s%s", r.Code, r.Stdout, r.Stderr)
	}
	if left := podNames(t, ns); len(left) != 0 {
		t.Errorf("after kubectl drain: pods %v left", left)
	}
	for i := range 3 {
		name := fmt.Sprintf("guarded-%d", i)
		if data, err := os.ReadFile(filepath.Join(marks, name)); err != nil || string(data) != "term\n" {
			t.Errorf("drained pod %s: marks %q (%v), want SIGTERM handled within its grace", name, data, err)
		}
	}
	kubectl(t, "uncordon", n.Name)

	old := apiNode(t, n)
	kubectl(t, "delete", "node", n.Name)
	node := waitReady(t, n, old.UID)
	if node.Spec.Unschedulable {
		t.Errorf("the node registered again unschedulable")
	}
}
