//go:build e2e

package clustere2e

import (
	"context"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/microlet/microlet/internal/devnode"
)

// TestEnvironmentFromEverySource: a container's environment, read with
// `env` inside it, holds plain and $(VAR)-expanded values, every fieldRef
// and a resourceFieldRef, configMap and secret keys, envFrom of both with
// a prefix, the master service's KUBERNETES_SERVICE_* and the links of its
// namespace's Service; its args are expanded from it. A pod with
// enableServiceLinks false gets the master service's variables only. A pod
// whose configMap key is missing waits with CreateContainerConfigError and
// the kubelet's message, and runs once the configMap exists.
func TestEnvironmentFromEverySource(t *testing.T) {
	t.Parallel()
	n := startReadyNode(t)
	ns := testNamespace(t)
	ctx := context.Background()
	admin := cluster(t).Admin
	if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"},
		Data: map[string]string{"color": "blue", "size": "L"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := admin.CoreV1().Secrets(ns).Create(ctx, &v1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sec"},
		StringData: map[string]string{"password": "s3cret", "user": "admin"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	db, err := admin.CoreV1().Services(ns).Create(ctx, &v1.Service{ObjectMeta: metav1.ObjectMeta{Name: "my-db"},
		Spec: v1.ServiceSpec{Selector: map[string]string{"app": "db"}, Ports: []v1.ServicePort{
			{Name: "pg", Port: 5432, Protocol: v1.ProtocolTCP}, {Name: "metrics", Port: 9187, Protocol: v1.ProtocolUDP}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	master, err := admin.CoreV1().Services(metav1.NamespaceDefault).Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	c := v1.Container{Name: "app", Image: devnode.DefaultTestImage,
		Command: []string{"sh", "-c", "echo '$(GREETING) from $(POD_NAME), $$(GREETING)' > /tmp/args; exec sleep 3600"},
		Env: []v1.EnvVar{
			{Name: "GREETING", Value: "hello $(CFG_color) $(MY_DB_SERVICE_PORT)"},
			{Name: "POD_NAME", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
			{Name: "POD_NAMESPACE", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.namespace"}}},
			{Name: "POD_UID", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.uid"}}},
			{Name: "TIER", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.labels['tier']"}}},
			{Name: "OWNER", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "metadata.annotations['owner']"}}},
			{Name: "NODE", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}},
			{Name: "SA", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "spec.serviceAccountName"}}},
			{Name: "HOST_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.hostIP"}}},
			{Name: "HOST_IPS", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.hostIPs"}}},
			{Name: "POD_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}},
			{Name: "POD_IPS", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIPs"}}},
			{Name: "MEM_LIMIT_MI", ValueFrom: &v1.EnvVarSource{ResourceFieldRef: &v1.ResourceFieldSelector{Resource: "limits.memory", Divisor: resource.MustParse("1Mi")}}},
			{Name: "COLOR", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "color"}}},
			{Name: "PASSWORD", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}, Key: "password"}}},
			{Name: "NO_SUCH_KEY", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}, Key: "ghost", Optional: ptr.To(true)}}},
			{Name: "NO_SUCH_SECRET", ValueFrom: &v1.EnvVarSource{SecretKeyRef: &v1.SecretKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "ghost"}, Key: "k", Optional: ptr.To(true)}}},
			{Name: "SEC_user", Value: "overridden"},
		},
		EnvFrom: []v1.EnvFromSource{
			{Prefix: "CFG_", ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "cfg"}}},
			{Prefix: "SEC_", SecretRef: &v1.SecretEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "sec"}}},
			{ConfigMapRef: &v1.ConfigMapEnvSource{LocalObjectReference: v1.LocalObjectReference{Name: "ghost"}, Optional: ptr.To(true)}},
		},
		Resources: v1.ResourceRequirements{Limits: v1.ResourceList{v1.ResourceMemory: resource.MustParse("64Mi")}},
	}
	spec := apiPodSpec(n, c)
	if _, err := admin.CoreV1().Pods(ns).Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "env",
		Labels: map[string]string{"tier": "web"}, Annotations: map[string]string{"owner": "team-a"}}, Spec: spec}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	unlinked := apiPodSpec(n, v1.Container{Name: "app", Image: devnode.DefaultTestImage, Command: []string{"sleep", "3600"}})
	unlinked.EnableServiceLinks = ptr.To(false)
	if _, err := admin.CoreV1().Pods(ns).Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "unlinked"}, Spec: unlinked}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	late := apiPodSpec(n, v1.Container{Name: "app", Image: devnode.DefaultTestImage, Command: []string{"sleep", "3600"},
		Env: []v1.EnvVar{{Name: "LATE", ValueFrom: &v1.EnvVarSource{ConfigMapKeyRef: &v1.ConfigMapKeySelector{LocalObjectReference: v1.LocalObjectReference{Name: "late"}, Key: "k"}}}}})
	lateCreated, err := admin.CoreV1().Pods(ns).Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "late"}, Spec: late}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	pod := waitAPIPod(t, n, ns, "env", "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	env := envOf(t, n, pod)
	podIP := pod.Status.PodIP
	want := map[string]string{
		"GREETING":      "hello blue 5432",
		"POD_NAME":      "env",
		"POD_NAMESPACE": ns,
		"POD_UID":       string(pod.UID),
		"TIER":          "web",
		"OWNER":         "team-a",
		"NODE":          n.Name,
		"SA":            "default",
		"HOST_IP":       "127.0.0.1",
		"HOST_IPS":      "127.0.0.1",
		"POD_IP":        podIP,
		"POD_IPS":       podIP,
		"MEM_LIMIT_MI":  "64",
		"COLOR":         "blue",
		"PASSWORD":      "s3cret",
		"CFG_color":     "blue",
		"CFG_size":      "L",
		"SEC_password":  "s3cret",
		"SEC_user":      "overridden",
		// The master service, as every pod in a cluster sees it.
		"KUBERNETES_SERVICE_HOST":       master.Spec.ClusterIP,
		"KUBERNETES_SERVICE_PORT":       "443",
		"KUBERNETES_SERVICE_PORT_HTTPS": "443",
		"KUBERNETES_PORT":               "tcp://" + master.Spec.ClusterIP + ":443",
		"KUBERNETES_PORT_443_TCP_ADDR":  master.Spec.ClusterIP,
		// The namespace's Service, Docker link style.
		"MY_DB_SERVICE_HOST":         db.Spec.ClusterIP,
		"MY_DB_SERVICE_PORT":         "5432",
		"MY_DB_SERVICE_PORT_PG":      "5432",
		"MY_DB_SERVICE_PORT_METRICS": "9187",
		"MY_DB_PORT":                 "tcp://" + db.Spec.ClusterIP + ":5432",
		"MY_DB_PORT_5432_TCP":        "tcp://" + db.Spec.ClusterIP + ":5432",
		"MY_DB_PORT_5432_TCP_PROTO":  "tcp",
		"MY_DB_PORT_5432_TCP_PORT":   "5432",
		"MY_DB_PORT_5432_TCP_ADDR":   db.Spec.ClusterIP,
		"MY_DB_PORT_9187_UDP":        "udp://" + db.Spec.ClusterIP + ":9187",
	}
	for k, v := range want {
		if got, ok := env[k]; !ok || got != v {
			t.Errorf("%s=%q (set: %v), want %q", k, got, ok, v)
		}
	}
	for _, k := range []string{"NO_SUCH_KEY", "NO_SUCH_SECRET"} {
		if v, ok := env[k]; ok {
			t.Errorf("%s=%q: an optional reference to something missing sets nothing", k, v)
		}
	}
	if got := execIn(t, n, pod.UID, "cat", "/tmp/args"); got != "hello blue 5432 from env, $(GREETING)\n" {
		t.Errorf("expanded args wrote %q", got)
	}

	unlinkedPod := waitAPIPod(t, n, ns, "unlinked", "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	env = envOf(t, n, unlinkedPod)
	if env["KUBERNETES_SERVICE_HOST"] != master.Spec.ClusterIP {
		t.Errorf("enableServiceLinks false: KUBERNETES_SERVICE_HOST=%q, want the master service's %s", env["KUBERNETES_SERVICE_HOST"], master.Spec.ClusterIP)
	}
	for k := range env {
		if strings.HasPrefix(k, "MY_DB_") {
			t.Errorf("enableServiceLinks false: %s set", k)
		}
	}

	const lateMsg = `configmaps "late" not found`
	waitAPIPod(t, n, ns, "late", "waiting CreateContainerConfigError", func(p *v1.Pod) bool {
		cs := p.Status.ContainerStatuses
		return len(cs) == 1 && cs[0].State.Waiting != nil && cs[0].State.Waiting.Reason == "CreateContainerConfigError" &&
			cs[0].State.Waiting.Message == lateMsg
	})
	waitForReasons(t, n, "the late pod's events", podEvents(t, lateCreated), "Failed")
	for _, e := range podEvents(t, lateCreated)() {
		if e.Reason == "Failed" && e.Message != "Error: "+lateMsg {
			t.Errorf("Failed event %q, want the kubelet's %q", e.Message, "Error: "+lateMsg)
		}
	}
	if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "late"},
		Data: map[string]string{"k": "finally"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	latePod := waitAPIPod(t, n, ns, "late", "Running once its configMap exists", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	if got := envOf(t, n, latePod)["LATE"]; got != "finally" {
		t.Errorf("LATE=%q, want the configMap's value", got)
	}
}

// envOf is the environment of pod's running container, as `env` prints
// it inside.
func envOf(t *testing.T, n *clusterNode, pod *v1.Pod) map[string]string {
	t.Helper()
	env := map[string]string{}
	for _, line := range strings.Split(execIn(t, n, pod.UID, "env"), "\n") {
		if k, v, ok := strings.Cut(line, "="); ok {
			env[k] = v
		}
	}
	return env
}
