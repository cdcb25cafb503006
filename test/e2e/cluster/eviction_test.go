//go:build e2e

package clustere2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/microlet/microlet/internal/devnode"
	pressuree2e "github.com/microlet/microlet/test/e2e/pressure"
)

// TestMemoryPressureEvictsAnAPIPod: a pod from the API server that fills a
// memory-backed emptyDir past the node's allocatable threshold is evicted
// as the kubelet evicts it: Failed / Evicted in the API with the eviction
// manager's message and a DisruptionTarget condition, and it stays there
// (an evicted pod is not deleted); the pod next to it runs on. The node is
// set up as the pressure suite's TestMemoryHogEvicted: pods may use 700Mi,
// memory.available<300Mi, the hog stops at 300Mi so the OOM killer never
// acts.
func TestMemoryPressureEvictsAnAPIPod(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{Plugins: []pressuree2e.Plugin{
		{Kind: "cgroup", Name: "default", Body: fmt.Sprintf("kube_reserved = { memory = \"%d\" }", pressuree2e.KubeReservedFor(t, 700*pressuree2e.Mi))},
		{Kind: "eviction", Name: "kubelet", Body: `hard = ["memory.available<300Mi"]`},
		{Kind: "imagegc", Name: "lru"},
		{Kind: "stats", Name: "default"},
	}})
	waitReady(t, n, "")
	ns := testNamespace(t)
	pods := cluster(t).Admin.CoreV1().Pods(ns)
	ctx := context.Background()
	create := func(name, script string, volumes ...v1.Volume) {
		c := v1.Container{Name: "app", Image: devnode.DefaultTestImage, Command: []string{"sh", "-c", script},
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resource.MustParse("16Mi")}}}
		if len(volumes) > 0 {
			c.Resources = v1.ResourceRequirements{} // the hog is BestEffort: evicted first
			c.VolumeMounts = []v1.VolumeMount{{Name: "data", MountPath: "/data"}}
		}
		spec := apiPodSpec(n, c, volumes...)
		spec.RestartPolicy = v1.RestartPolicyNever
		if _, err := pods.Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("innocent", pressuree2e.WaitForTermination)
	waitAPIPod(t, n, ns, "innocent", "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	create("hog", pressuree2e.FillScript(10, 30, "0.2"),
		v1.Volume{Name: "data", VolumeSource: v1.VolumeSource{EmptyDir: &v1.EmptyDirVolumeSource{Medium: v1.StorageMediumMemory}}})

	hog := waitAPIPod(t, n, ns, "hog", "Failed / Evicted", pressuree2e.Evicted)
	if !strings.HasPrefix(hog.Status.Message, "The node was low on resource: memory.") {
		t.Errorf("hog's message %q does not name memory", hog.Status.Message)
	}
	disrupted := false
	for _, c := range hog.Status.Conditions {
		disrupted = disrupted || (c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue && c.Reason == v1.PodReasonTerminationByKubelet)
	}
	if !disrupted {
		t.Errorf("hog's conditions %+v, want DisruptionTarget by the kubelet", hog.Status.Conditions)
	}
	innocent, err := pods.Get(ctx, "innocent", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if innocent.Status.Phase != v1.PodRunning || innocent.Status.ContainerStatuses[0].RestartCount != 0 {
		t.Errorf("the innocent pod after the eviction: %s", describe(innocent, nil))
	}
	// The kubelet's events: Evicted on the pod, with its message, and
	// EvictionThresholdMet on the node.
	checkEvictionEvents(t, n, hog)
}
