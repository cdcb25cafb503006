//go:build e2e

package clustere2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/microlet/microlet/internal/devnode"
	pressuree2e "github.com/microlet/microlet/test/e2e/pressure"
)

// untilTerm runs until SIGTERM, then notes it in /marks and exits 0.
const untilTerm = `trap 'echo term >> /marks/$HOSTNAME; exit 0' TERM; sleep 100000 & wait`

// TestDeploymentRunsAndScalesDown: a Deployment of 3 replicas is
// scheduled to a microlet node and Running with pod IPs in kubectl get
// pods -o wide; scaled down to 1, the two pods it loses run their preStop
// hook, then get SIGTERM, within their grace period, and leave the API.
func TestDeploymentRunsAndScalesDown(t *testing.T) {
	t.Parallel()
	n := startReadyNode(t)
	ns := testNamespace(t)
	marks := t.TempDir()
	replicas := int32(3)
	labels := map[string]string{"app": "web"}
	deploy := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: v1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: apiPodSpec(n, v1.Container{
					Name: "web", Image: devnode.DefaultTestImage, Command: []string{"sh", "-c", untilTerm},
					VolumeMounts: []v1.VolumeMount{{Name: "marks", MountPath: "/marks"}},
					Lifecycle: &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{
						Command: []string{"sh", "-c", "sleep 1; echo prestop >> /marks/$HOSTNAME"},
					}}},
				}, v1.Volume{Name: "marks", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: marks}}}),
			},
		},
	}
	ctx := context.Background()
	deployments := cluster(t).Admin.AppsV1().Deployments(ns)
	if _, err := deployments.Create(ctx, deploy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	running := regexp.MustCompile(`(?m)^web-\S+\s+1/1\s+Running\s+\d+\s+\S+\s+(\d+\.\d+\.\d+\.\d+)\s+` + regexp.QuoteMeta(n.Name) + `\s`)
	n.Eventually("3 pods Running with IPs on the node in kubectl get pods -o wide", func() (bool, string) {
		out := kubectl(t, "get", "pods", "-n", ns, "-o", "wide", "--no-headers")
		return len(running.FindAllString(out, -1)) == 3, out
	})

	before := podNames(t, ns)
	scale, err := deployments.GetScale(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	scale.Spec.Replicas = 1
	if _, err := deployments.UpdateScale(ctx, "web", scale, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.Eventually("1 pod left in the API", func() (bool, string) {
		names := podNames(t, ns)
		return len(names) == 1, strings.Join(names, " ")
	})
	left := podNames(t, ns)[0]
	for _, name := range before {
		if name == left {
			continue
		}
		data, err := os.ReadFile(filepath.Join(marks, name))
		if err != nil || string(data) != "prestop\nterm\n" {
			t.Errorf("pod %s ended with marks %q (%v), want its preStop hook, then SIGTERM", name, data, err)
		}
	}
}

// TestGracefulDeletionHonoursTheGrace: a pod deleted with a grace period
// whose container ignores SIGTERM runs until the grace is over, is killed,
// and then leaves the API (deleted by the node with grace 0).
func TestGracefulDeletionHonoursTheGrace(t *testing.T) {
	t.Parallel()
	n := startReadyNode(t)
	ns := testNamespace(t)
	pods := cluster(t).Admin.CoreV1().Pods(ns)
	ctx := context.Background()
	spec := apiPodSpec(n, v1.Container{Name: "app", Image: devnode.DefaultTestImage, Command: []string{"sh", "-c", "trap '' TERM; while true; do sleep 1; done"}})
	if _, err := pods.Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "stubborn"}, Spec: spec}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAPIPod(t, n, ns, "stubborn", "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	const grace = 3 * time.Second
	deleted := time.Now()
	kubectl(t, "delete", "pod", "-n", ns, "stubborn", "--grace-period=3", "--wait=false")
	waitAPIPodGone(t, n, ns, "stubborn", "the pod gone from the API")
	// A lower bound only: the container cannot have stopped before its
	// grace ran out, since it ignores SIGTERM.
	if took := time.Since(deleted); took < grace {
		t.Errorf("the pod left the API %v after its deletion, before its grace of %v", took, grace)
	}
}

// TestStaticPodMirror: a static pod's mirror pod appears in the API with
// the kubelet's annotations and the Node as owner, is created again after
// kubectl delete, and goes with the manifest.
func TestStaticPodMirror(t *testing.T) {
	t.Parallel()
	manifests := t.TempDir()
	manifest := filepath.Join(manifests, "static.yaml")
	writeFile(t, manifest, fmt.Sprintf("apiVersion: v1\nkind: Pod\nmetadata: {name: static, namespace: default}\n"+
		"spec:\n  terminationGracePeriodSeconds: 2\n  containers: [{name: app, image: %s, command: [sh, -c, %q]}]\n", devnode.DefaultTestImage, untilTerm))
	n := startNode(t, nodeOptions{Settings: map[string]string{"static_pod_path": quote(manifests), "file_check_frequency": `"1s"`}})
	node := waitReady(t, n, "")
	name := "static-" + n.Name
	mirror := waitAPIPod(t, n, "default", name, "the mirror pod Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	if mirror.Annotations["kubernetes.io/config.mirror"] == "" || mirror.Annotations["kubernetes.io/config.mirror"] != mirror.Annotations["kubernetes.io/config.hash"] ||
		mirror.Annotations["kubernetes.io/config.source"] != "file" {
		t.Errorf("mirror pod annotations %v", mirror.Annotations)
	}
	if refs := mirror.OwnerReferences; len(refs) != 1 || refs[0].Kind != "Node" || refs[0].Name != n.Name || refs[0].UID != node.UID {
		t.Errorf("mirror pod owners %+v, want the Node %s", refs, n.Name)
	}
	if out := kubectl(t, "get", "pod", "-n", "default", name, "--no-headers"); !regexp.MustCompile(`^` + name + `\s+1/1\s+Running\s`).MatchString(out) {
		t.Errorf("kubectl get pod: %q, want Running", out)
	}

	kubectl(t, "delete", "pod", "-n", "default", name, "--wait=false")
	waitAPIPod(t, n, "default", name, "the mirror pod created again", func(p *v1.Pod) bool {
		return p.UID != mirror.UID && p.DeletionTimestamp == nil && p.Status.Phase == v1.PodRunning
	})

	if err := os.Remove(manifest); err != nil {
		t.Fatal(err)
	}
	waitAPIPodGone(t, n, "default", name, "the mirror pod gone with the manifest")
}

// TestPodsTheNodeCannotRun: a pod asking for more CPU than the node has is
// Failed / OutOfcpu with upstream's message, one whose node selector the
// Node does not match Failed / NodeAffinity, one with a volume the node
// cannot set up (a persistentVolumeClaim) Failed / UnsupportedVolume; none
// harms a pod that runs next to them.
func TestPodsTheNodeCannotRun(t *testing.T) {
	t.Parallel()
	n := startReadyNode(t)
	ns := testNamespace(t)
	pods := cluster(t).Admin.CoreV1().Pods(ns)
	ctx := context.Background()
	create := func(name string, mutate func(*v1.PodSpec)) {
		spec := apiPodSpec(n, v1.Container{Name: "app", Image: devnode.DefaultTestImage, Command: []string{"sh", "-c", untilTerm}})
		spec.NodeName = n.Name // straight to the node: the scheduler would not place these
		spec.Containers[0].VolumeMounts = nil
		mutate(&spec)
		if _, err := pods.Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	create("steady", func(*v1.PodSpec) {})
	steady := waitAPIPod(t, n, ns, "steady", "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })

	create("hog", func(s *v1.PodSpec) {
		s.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resource.MustParse("1000")}
	})
	create("claim", func(s *v1.PodSpec) {
		s.Volumes = []v1.Volume{{Name: "data", VolumeSource: v1.VolumeSource{PersistentVolumeClaim: &v1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
	})
	create("elsewhere", func(s *v1.PodSpec) { s.NodeSelector["topology.kubernetes.io/zone"] = "nowhere" })
	hog := waitAPIPod(t, n, ns, "hog", "Failed / OutOfcpu", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if hog.Status.Reason != "OutOfcpu" || !strings.HasPrefix(hog.Status.Message, "Pod was rejected: Node didn't have enough resource: cpu, requested: 1000000, ") {
		t.Errorf("hog: reason %q message %q, want OutOfcpu and upstream's message", hog.Status.Reason, hog.Status.Message)
	}
	if out := kubectl(t, "get", "pod", "-n", ns, "hog", "--no-headers"); !regexp.MustCompile(`^hog\s+0/1\s+OutOfcpu\s`).MatchString(out) {
		t.Errorf("kubectl get pod hog: %q, want OutOfcpu", out)
	}
	claim := waitAPIPod(t, n, ns, "claim", "Failed / UnsupportedVolume", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if claim.Status.Reason != "UnsupportedVolume" || !strings.Contains(claim.Status.Message, `volume "data"`) {
		t.Errorf("claim: reason %q message %q, want UnsupportedVolume naming the volume", claim.Status.Reason, claim.Status.Message)
	}
	elsewhere := waitAPIPod(t, n, ns, "elsewhere", "Failed / NodeAffinity", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if elsewhere.Status.Reason != "NodeAffinity" ||
		elsewhere.Status.Message != "Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector" {
		t.Errorf("elsewhere: reason %q message %q, want NodeAffinity and upstream's message", elsewhere.Status.Reason, elsewhere.Status.Message)
	}
	now, err := pods.Get(ctx, "steady", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if now.Status.Phase != v1.PodRunning || now.Status.ContainerStatuses[0].RestartCount != 0 ||
		now.Status.ContainerStatuses[0].ContainerID != steady.Status.ContainerStatuses[0].ContainerID {
		t.Errorf("the steady pod was disturbed: %s", pressuree2e.DescribePod(now))
	}
}

// apiPodSpec is a pod spec for node n: pinned to it by its hostname label
// (other tests' nodes share the control plane), with no service account
// token (TestDeploymentWithTheServiceAccountVolume has one), c as the
// container and volumes.
func apiPodSpec(n *clusterNode, c v1.Container, volumes ...v1.Volume) v1.PodSpec {
	return v1.PodSpec{
		NodeSelector:                  map[string]string{v1.LabelHostname: n.Name},
		AutomountServiceAccountToken:  ptr.To(false),
		TerminationGracePeriodSeconds: ptr.To[int64](10),
		Containers:                    []v1.Container{c},
		Volumes:                       volumes,
	}
}

// testNamespace makes a namespace for t's API objects, with the default
// service account pods need, and deletes it when t ends.
func testNamespace(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	admin := cluster(t).Admin
	name := nodeName(t)
	if _, err := admin.CoreV1().Namespaces().Create(ctx, &v1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = admin.CoreV1().Namespaces().Delete(context.Background(), name, metav1.DeleteOptions{})
	})
	_, err := admin.CoreV1().ServiceAccounts(name).Create(ctx, &v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) { // the controller-manager may have been first
		t.Fatal(err)
	}
	return name
}

// waitAPIPod waits until the pod ns/name in the API of n's cluster
// satisfies cond; t may be a subtest.
func waitAPIPod(t *testing.T, n *clusterNode, ns, name, what string, cond func(*v1.Pod) bool) *v1.Pod {
	t.Helper()
	var pod *v1.Pod
	eventually(t, fmt.Sprintf("pod %s/%s: %s", ns, name, what), func() (bool, string) {
		p, err := n.Cluster.Admin.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		pod = p
		return cond(p), describe(p, nil)
	})
	return pod
}

// waitAPIPodGone waits until the pod ns/name has left the API of n's
// cluster.
func waitAPIPodGone(t *testing.T, n *clusterNode, ns, name, what string) {
	t.Helper()
	eventually(t, what, func() (bool, string) {
		p, err := n.Cluster.Admin.CoreV1().Pods(ns).Get(context.Background(), name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, ""
		}
		return false, describe(p, err)
	})
}

func describe(p *v1.Pod, err error) string {
	if err != nil {
		return err.Error()
	}
	return fmt.Sprintf("%s (%s: %s)", pressuree2e.DescribePod(p), p.Status.Reason, p.Status.Message)
}

// podNames are the names of the pods of namespace ns in the API.
func podNames(t *testing.T, ns string) []string {
	t.Helper()
	list, err := cluster(t).Admin.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Items {
		names = append(names, p.Name)
	}
	return names
}

func writeFile(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestAPIPodsAcrossARestart: while microlet is stopped, one of its pods is
// deleted and a new one is created. Started again, it finishes the deleted
// pod and removes it from the API, runs the new one, and leaves the one
// that stayed as it was: same container, no restart, still Running.
func TestAPIPodsAcrossARestart(t *testing.T) {
	t.Parallel()
	n := startReadyNode(t)
	ns := testNamespace(t)
	pods := cluster(t).Admin.CoreV1().Pods(ns)
	ctx := context.Background()
	create := func(name string) {
		spec := apiPodSpec(n, v1.Container{Name: "app", Image: devnode.DefaultTestImage, Command: []string{"sh", "-c", untilTerm}})
		spec.NodeName = n.Name
		if _, err := pods.Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	isRunning := func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning }
	create("stays")
	create("goes")
	stays := waitAPIPod(t, n, ns, "stays", "Running", isRunning)
	waitAPIPod(t, n, ns, "goes", "Running", isRunning)

	n.StopCore()
	kubectl(t, "delete", "pod", "-n", ns, "goes", "--wait=false")
	create("new")
	n.StartCore()

	waitAPIPod(t, n, ns, "new", "Running", isRunning)
	waitAPIPodGone(t, n, ns, "goes", "the pod deleted meanwhile gone from the API")
	now, err := pods.Get(ctx, "stays", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !isRunning(now) || now.Status.ContainerStatuses[0].RestartCount != 0 ||
		now.Status.ContainerStatuses[0].ContainerID != stays.Status.ContainerStatuses[0].ContainerID {
		t.Errorf("the pod that stayed: %s, want it Running in the same container %s", describe(now, nil), stays.Status.ContainerStatuses[0].ContainerID)
	}
}

// TestReadinessGate: a pod with a readiness gate is not Ready while the
// gate's condition is missing, with the kubelet's reason, and turns Ready
// once a controller sets the condition True in the API.
func TestReadinessGate(t *testing.T) {
	t.Parallel()
	n := startReadyNode(t)
	ns := testNamespace(t)
	pods := cluster(t).Admin.CoreV1().Pods(ns)
	ctx := context.Background()
	const gate = v1.PodConditionType("example.com/load-balancer")
	spec := apiPodSpec(n, v1.Container{Name: "app", Image: devnode.DefaultTestImage, Command: []string{"sh", "-c", untilTerm}})
	spec.NodeName = n.Name
	spec.ReadinessGates = []v1.PodReadinessGate{{ConditionType: gate}}
	if _, err := pods.Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "gated"}, Spec: spec}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ready := func(p *v1.Pod) *v1.PodCondition {
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == v1.PodReady {
				return &p.Status.Conditions[i]
			}
		}
		return nil
	}
	gated := waitAPIPod(t, n, ns, "gated", "Running, not Ready for its gate", func(p *v1.Pod) bool {
		c := ready(p)
		return p.Status.Phase == v1.PodRunning && c != nil && c.Status == v1.ConditionFalse && c.Reason == "ReadinessGatesNotReady"
	})
	// As a controller does: a patch merging one condition, no version
	// precondition to race the node's own writes.
	patch := fmt.Sprintf(`{"status":{"conditions":[{"type":%q,"status":"True"}]}}`, gate)
	if _, err := pods.Patch(ctx, gated.Name, types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	waitAPIPod(t, n, ns, "gated", "Ready with its gate's condition kept", func(p *v1.Pod) bool {
		c := ready(p)
		kept := false
		for _, pc := range p.Status.Conditions {
			kept = kept || (pc.Type == gate && pc.Status == v1.ConditionTrue)
		}
		return c != nil && c.Status == v1.ConditionTrue && kept
	})
}
