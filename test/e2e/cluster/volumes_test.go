//go:build e2e

package clustere2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/microlet/microlet/internal/devnode"
)

// TestDeploymentWithTheServiceAccountVolume: a Deployment as `kubectl
// create deployment` makes it, with the default service account volume
// (a projected token, kube-root-ca.crt and the namespace), runs; its
// container reads the token, which the API server's TokenReview accepts
// as the service account's bound to the pod, and its namespace.
func TestDeploymentWithTheServiceAccountVolume(t *testing.T) {
	t.Parallel()
	n := startReadyNode(t)
	ns := testNamespace(t)
	// No replica until the pods are pinned to this node: other tests'
	// nodes share the control plane.
	kubectl(t, "create", "deployment", "sa", "-n", ns, "--image="+devnode.DefaultTestImage, "--replicas=0", "--", "sleep", "3600")
	kubectl(t, "patch", "deployment", "sa", "-n", ns, "-p", fmt.Sprintf(`{"spec":{"template":{"spec":{"nodeSelector":{%q:%q}}}}}`, v1.LabelHostname, n.Name))
	kubectl(t, "scale", "deployment", "sa", "-n", ns, "--replicas=1")
	var pod *v1.Pod
	n.Eventually("the deployment's pod Running", func() (bool, string) {
		list, err := cluster(t).Admin.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: "app=sa"})
		if err != nil || len(list.Items) != 1 {
			return false, fmt.Sprintf("%d pods, %v", len(list.Items), err)
		}
		pod = &list.Items[0]
		return pod.Status.Phase == v1.PodRunning, describe(pod, nil)
	})
	if !hasServiceAccountVolume(pod) {
		t.Fatalf("the pod has no kube-api-access volume: %+v", pod.Spec.Volumes)
	}
	const dir = "/var/run/secrets/kubernetes.io/serviceaccount/"
	if got := execIn(t, n, pod.UID, "cat", dir+"namespace"); got != ns {
		t.Errorf("namespace file %q, want %q", got, ns)
	}
	if got := execIn(t, n, pod.UID, "cat", dir+"ca.crt"); !strings.HasPrefix(got, "-----BEGIN CERTIFICATE-----") {
		t.Errorf("ca.crt %q, want the cluster's CA", got)
	}
	token := execIn(t, n, pod.UID, "cat", dir+"token")
	review, err := cluster(t).Admin.AuthenticationV1().TokenReviews().Create(context.Background(),
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	st := review.Status
	if !st.Authenticated || st.User.Username != "system:serviceaccount:"+ns+":default" ||
		strings.Join(st.User.Extra["authentication.kubernetes.io/pod-name"], "") != pod.Name {
		t.Errorf("TokenReview of the mounted token: %+v, want the default service account's, bound to pod %s", st, pod.Name)
	}
}

// execIn runs cmd in the pod's running container through the node's
// runtime and returns its stdout. (kubectl exec would need the API server
// to reach the node API by the node's hostname, which the harness's
// nodes do not resolve.)
func execIn(t *testing.T, n *clusterNode, uid types.UID, cmd ...string) string {
	t.Helper()
	code, stdout, stderr := execResult(t, n, uid, "", cmd...)
	if code != 0 {
		t.Fatalf("exec %v: exit code %d: %s", cmd, code, stderr)
	}
	return stdout
}

// execResult runs cmd in the pod's running container of that name, or
// with "" its first running one, and returns its exit code, stdout and
// stderr, whatever the code.
func execResult(t *testing.T, n *clusterNode, uid types.UID, container string, cmd ...string) (int32, string, string) {
	t.Helper()
	for _, c := range n.Containers(uid) {
		if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING || container != "" && c.Metadata.Name != container {
			continue
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		resp, err := n.CRI.ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: c.Id, Cmd: cmd, Timeout: 20})
		if err != nil {
			t.Fatalf("exec %v: %v", cmd, err)
		}
		return resp.ExitCode, string(resp.Stdout), string(resp.Stderr)
	}
	t.Fatalf("exec %v: pod %s has no running container %s", cmd, uid, container)
	return 0, "", ""
}

func hasServiceAccountVolume(pod *v1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if strings.HasPrefix(v.Name, "kube-api-access-") && v.Projected != nil {
			return true
		}
	}
	return false
}

// TestConfigMapAndSecretVolumes: a pod waits (ContainerCreating, with
// FailedMount events) while its configMap is missing and runs once it
// exists; its configMap and secret files are there with their modes (the
// secret readable by the fsGroup of a non-root container), behind
// upstream's ..data layout; an edit of the configMap, which the node
// watches, or of the pod's labels for its downwardAPI volume, reaches the
// mounted file.
func TestConfigMapAndSecretVolumes(t *testing.T) {
	t.Parallel()
	// A short sync period: updates reach files on a pod sync.
	n := startNode(t, nodeOptions{Settings: map[string]string{"sync_frequency": `"5s"`}})
	waitReady(t, n, "")
	ns := testNamespace(t)
	ctx := context.Background()
	admin := cluster(t).Admin
	if _, err := admin.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sec"},
		StringData: map[string]string{"password": "s3cret"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	mode := int32(0o400)
	spec := apiPodSpec(n, v1.Container{Name: "app", Image: devnode.DefaultTestImage, Command: []string{"sh", "-c", untilTerm},
		VolumeMounts: []v1.VolumeMount{{Name: "cfg", MountPath: "/cfg"}, {Name: "sec", MountPath: "/sec"}, {Name: "info", MountPath: "/info"}}},
		v1.Volume{Name: "cfg", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"},
			Items: []v1.KeyToPath{{Key: "greeting", Path: "conf/greeting"}}}}},
		v1.Volume{Name: "sec", VolumeSource: v1.VolumeSource{Secret: &v1.SecretVolumeSource{SecretName: "sec", DefaultMode: &mode}}},
		v1.Volume{Name: "info", VolumeSource: v1.VolumeSource{DownwardAPI: &v1.DownwardAPIVolumeSource{Items: []v1.DownwardAPIVolumeFile{
			{Path: "labels", FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels"}}}}}})
	// Not root: the secret is readable through the fsGroup.
	spec.SecurityContext = &v1.PodSecurityContext{RunAsUser: ptr.To[int64](1000), FSGroup: ptr.To[int64](2000)}
	created, err := admin.CoreV1().Pods(ns).Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "files"}, Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitAPIPod(t, n, ns, "files", "Pending, ContainerCreating while the configMap is missing", func(p *v1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return p.Status.Phase == v1.PodPending && len(cs) == 1 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == "ContainerCreating"
	})
	waitForReasons(t, n, "the pod's events", podEvents(t, created), "FailedMount")
	for _, e := range podEvents(t, created)() {
		if e.Reason == "FailedMount" && e.Message != `MountVolume.SetUp failed for volume "cfg" : configmaps "cfg" not found` {
			t.Errorf("FailedMount event %q, want the kubelet's message", e.Message)
		}
	}
	cm := &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}, Data: map[string]string{"greeting": "hello"}}
	if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	pod := waitAPIPod(t, n, ns, "files", "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })

	exec := func(script string) string { return execIn(t, n, pod.UID, "sh", "-c", script) }
	if got := exec("cat /cfg/conf/greeting; echo; cat /sec/password"); got != "hello\ns3cret" {
		t.Errorf("files %q, want the configMap's and the secret's values", got)
	}
	if got := exec("stat -L -c '%a %g' /sec/password; readlink /cfg/conf; readlink /cfg/..data"); !strings.HasPrefix(got, "440 2000\n..data/conf\n..20") {
		t.Errorf("mode and links %q, want 440 (0400 readable by the fsGroup) of group 2000, conf -> ..data/conf, ..data -> the timestamped directory", got)
	}
	if got := exec("grep ' /sec ' /proc/mounts | cut -d' ' -f3,4"); !strings.HasPrefix(got, "tmpfs ro") {
		t.Errorf("/sec is mounted %q, want a read-only tmpfs", got)
	}

	cm.Data["greeting"] = "hello again"
	if _, err := admin.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	n.Eventually("the configMap's update in the mounted file", func() (bool, string) {
		got := exec("cat /cfg/conf/greeting")
		return got == "hello again", got
	})
	// Upstream's Watch strategy: the node lists and watches the configMap
	// by name, and never GETs it.
	var lists, gets int
	for _, e := range n.APICalls(t) {
		if e.ObjectRef == nil || e.ObjectRef.Resource != "configmaps" || e.ObjectRef.Namespace != ns {
			continue
		}
		switch {
		case e.Verb == "list" && strings.Contains(e.RequestURI, "fieldSelector=metadata.name%3Dcfg"):
			lists++
		case e.Verb == "get":
			gets++
		}
	}
	if lists == 0 || gets != 0 {
		t.Errorf("the node listed the configMap by name %d times and got it %d times; want lists (for its watch) and no get", lists, gets)
	}
	kubectl(t, "label", "pod", "-n", ns, "files", "tier=web")
	n.Eventually("the new label in the downwardAPI file", func() (bool, string) {
		got := exec("cat /info/labels")
		return got == `tier="web"`, got
	})
}
