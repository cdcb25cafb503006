//go:build e2e

package clustere2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/microlet/microlet/internal/devcluster"
	"github.com/microlet/microlet/internal/devnode"
)

// testDebugPod: kubectl debug adds an ephemeral container to a running
// pod, in the process namespace of its --target; the pod's own container
// goes on; -it gives a terminal in a new one.
func testDebugPod(t *testing.T, n *clusterNode, ns string) {
	before := waitAPIPod(t, n, ns, "server", "Ready", podReady)
	kubectl(t, "debug", "-n", ns, "server", "--image="+devnode.DefaultTestImage, "--target=app", "-c", "dbg", "--",
		"sh", "-c", "ps; sleep 100000")
	pod := waitAPIPod(t, n, ns, "server", "the ephemeral container dbg running", func(p *v1.Pod) bool {
		for _, s := range p.Status.EphemeralContainerStatuses {
			if s.Name == "dbg" {
				return s.State.Running != nil
			}
		}
		return false
	})
	eventually(t, "the ephemeral container's ps to list its target's httpd", func() (bool, string) {
		out := kubectl(t, "logs", "-n", ns, "server", "-c", "dbg")
		return strings.Contains(out, "httpd -p 8081"), out
	})
	if got, was := pod.Status.ContainerStatuses[0], before.Status.ContainerStatuses[0]; got.ContainerID != was.ContainerID || got.State.Running == nil {
		t.Errorf("the pod's container after kubectl debug: %+v, want %s running on", got, was.ContainerID)
	}
	if out := kubectl(t, "exec", "-n", ns, "server", "-c", "dbg", "--", "sh", "-c", "echo in-dbg"); out != "in-dbg\n" {
		t.Errorf("kubectl exec into the ephemeral container: %q", out)
	}

	r := kubectlTTY(t, nil, "ps; exit 0\n", "debug", "-it", "-n", ns, "server", "--image="+devnode.DefaultTestImage,
		"--target=app", "-c", "dbg2", "--", "sh")
	if !strings.Contains(r.Stdout, "httpd -p 8082") {
		t.Errorf("kubectl debug -it, typed ps: %q, want the target's processes", r.Stdout)
	}
	out := kubectl(t, "describe", "pod", "-n", ns, "server")
	for _, want := range []string{"Ephemeral Containers:", "dbg:", "dbg2:", "Started container dbg"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl describe pod after kubectl debug lacks %q:\n%s", want, out)
		}
	}
}

var debuggerPod = regexp.MustCompile(`Creating debugging pod (\S+) with container debugger on node`)

// testDebugNode: kubectl debug node/<node> runs a pod on the node in its
// PID, network and IPC namespaces, with the node's root at /host.
func testDebugNode(t *testing.T, n *clusterNode) {
	ns := testNamespace(t)
	out := kubectl(t, "debug", "-n", ns, "node/"+n.Name, "--image="+devnode.DefaultTestImage, "--",
		"sh", "-c", "cat /host/etc/hostname /proc/1/comm; sleep 100000")
	m := debuggerPod.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("kubectl debug node/%s: %q", n.Name, out)
	}
	pod := waitAPIPod(t, n, ns, m[1], "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	if s := pod.Spec; s.NodeName != n.Name || !s.HostPID || !s.HostNetwork || !s.HostIPC {
		t.Errorf("the node debugging pod: node %q, hostPID %v, hostNetwork %v, hostIPC %v", s.NodeName, s.HostPID, s.HostNetwork, s.HostIPC)
	}
	hostname, _ := os.ReadFile("/etc/hostname")
	init, _ := os.ReadFile("/proc/1/comm")
	want := string(hostname) + string(init)
	eventually(t, "the debugging pod to print the host's hostname file and PID 1", func() (bool, string) {
		got := kubectl(t, "logs", "-n", ns, m[1])
		return got == want, got
	})
}

// testNodeProxy: kubectl get --raw of each node endpoint through the API
// server's node proxy answers what the kubelet's does.
func testNodeProxy(t *testing.T, n *clusterNode) {
	for path, want := range map[string][]string{
		"stats/summary":    {`"nodeName": "` + n.Name + `"`, `"podRef"`, `"workingSetBytes"`},
		"metrics":          {"# TYPE kubelet_runtime_operations_total counter", "kubelet_http_requests_total"},
		"metrics/cadvisor": {"# TYPE container_cpu_usage_seconds_total counter", `container="app"`},
		"metrics/resource": {"node_cpu_usage_seconds_total", "container_memory_working_set_bytes", `pod="server"`},
		"metrics/probes":   {"# TYPE prober_probe_total counter", `probe_type="Readiness"`, `pod="server"`},
		"configz":          {`"kubeletconfig"`},
		"pods":             {`"kind":"PodList"`, `"name":"server"`},
		"healthz":          {"ok"},
	} {
		// The first stats and probe results of the node's pods come a few
		// seconds after they start, as on a kubelet.
		eventually(t, "kubectl get --raw /api/v1/nodes/"+n.Name+"/proxy/"+path+" to have "+strings.Join(want, ", ")+
			" (as the kubelet's answer has)", func() (bool, string) {
			out := kubectl(t, "get", "--raw", "/api/v1/nodes/"+n.Name+"/proxy/"+path)
			for _, w := range want {
				if !strings.Contains(out, w) {
					return false, fmt.Sprintf("lacks %q:\n%.600s", w, out)
				}
			}
			return true, ""
		})
	}
}

// testNodeAPIIdentity: the node API lets the API server in by its client
// certificate (kubectl above) after asking the API server whether it may
// (SubjectAccessReview), and refuses a client of another CA, no client
// certificate, and a known user the API server does not allow.
func testNodeAPIIdentity(t *testing.T, n *clusterNode) {
	other, err := devcluster.NewCA("intruder-ca")
	if err != nil {
		t.Fatal(err)
	}
	stranger, err := other.ClientCert("kube-apiserver-kubelet-client", "system:masters")
	if err != nil {
		t.Fatal(err)
	}
	nobody, err := n.Cluster.ClientCert("nobody")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		pair *devcluster.KeyPair
		want int
	}{
		{"no credentials", nil, http.StatusUnauthorized},
		{"a certificate of another CA", &stranger, http.StatusUnauthorized},
		{"a user the API server does not allow", &nobody, http.StatusForbidden},
	} {
		if code, body := getWithCert(t, n, "/pods", tc.pair); code != tc.want {
			t.Errorf("GET /pods with %s: %d %s, want %d", tc.name, code, body, tc.want)
		}
	}
	var reviews int
	events, err := n.Cluster.AuditEvents("system:node:" + n.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range events {
		if e.ObjectRef != nil && e.ObjectRef.Resource == "subjectaccessreviews" && e.Verb == "create" {
			reviews++
		}
	}
	if reviews == 0 {
		t.Errorf("the node asked the API server no SubjectAccessReview")
	}
}

// getWithCert GETs a node API path with a client certificate (none: nil).
func getWithCert(t *testing.T, n *clusterNode, path string, pair *devcluster.KeyPair) (int, string) {
	t.Helper()
	config := &tls.Config{InsecureSkipVerify: true}
	if pair != nil {
		cert, err := pair.TLS()
		if err != nil {
			t.Fatal(err)
		}
		config.Certificates = []tls.Certificate{cert}
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: config}}
	resp, err := client.Get(n.Secure + path)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// testDescribe: kubectl describe node shows the node's conditions,
// capacity, allocatable, its pods with their requests and its events;
// kubectl describe pod every step of a pod's life.
func testDescribe(t *testing.T, n *clusterNode, ns string) {
	out := kubectl(t, "describe", "node", n.Name)
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`(?m)^\s+Ready\s+True\s.*KubeletReady\s+kubelet is posting ready status`),
		regexp.MustCompile(`(?m)^\s+MemoryPressure\s+False\s.*KubeletHasSufficientMemory`),
		regexp.MustCompile(`(?m)^\s+DiskPressure\s+False\s.*KubeletHasNoDiskPressure`),
		regexp.MustCompile(`(?m)^\s+PIDPressure\s+False\s.*KubeletHasSufficientPID`),
		regexp.MustCompile(`(?m)^Capacity:\n(\s+\S+:\s+\S+\n)*\s+cpu:\s+\d+\n`),
		regexp.MustCompile(`(?m)^Allocatable:\n(\s+\S+:\s+\S+\n)*\s+memory:\s+\d+Ki\n`),
		regexp.MustCompile(`(?m)^\s+Kubelet Version:\s+\S+`),
		regexp.MustCompile(`(?m)^Non-terminated Pods:\s+\(\d+ in total\)`),
		regexp.MustCompile(`(?m)^\s+` + regexp.QuoteMeta(ns) + `\s+server\s+100m \(\d+%\)\s+0 \(0%\)\s+32Mi \(\d+%\)\s+0 \(0%\)`),
		regexp.MustCompile(`(?m)^Allocated resources:`),
		regexp.MustCompile(`(?m)^Events:\n(.*\n)*\s+Normal\s+Starting\s+.*\s+kubelet\s+`),
		regexp.MustCompile(`(?m)^\s+Normal\s+NodeReady\s+.*\s+kubelet\s+Node ` + regexp.QuoteMeta(n.Name) + ` status is now: NodeReady`),
	} {
		if !want.MatchString(out) {
			t.Errorf("kubectl describe node lacks %s (as a kubelet node's shows):\n%s", want, out)
		}
	}

	// It ignores SIGTERM, so that it stays Terminating, described, for
	// its 10 s of grace.
	spec := apiPodSpec(n, v1.Container{Name: "app", Image: devnode.DefaultTestImage, Command: []string{"sh", "-c", "trap '' TERM; while true; do sleep 1; done"}})
	if _, err := cluster(t).Admin.CoreV1().Pods(ns).Create(context.Background(),
		&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "described"}, Spec: spec}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAPIPod(t, n, ns, "described", "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	kubectl(t, "delete", "pod", "-n", ns, "described", "--wait=false")
	steps := []*regexp.Regexp{
		regexp.MustCompile(`Normal\s+Scheduled\s+.*default-scheduler\s+Successfully assigned ` + regexp.QuoteMeta(ns) + `/described to ` + regexp.QuoteMeta(n.Name)),
		regexp.MustCompile(`Normal\s+Pulled\s+.*kubelet\s+Container image "` + regexp.QuoteMeta(devnode.DefaultTestImage) + `" already present on machine`),
		regexp.MustCompile(`Normal\s+Created\s+.*kubelet\s+Created container: app`),
		regexp.MustCompile(`Normal\s+Started\s+.*kubelet\s+Started container app`),
		regexp.MustCompile(`Normal\s+Killing\s+.*kubelet\s+Stopping container app`),
	}
	eventually(t, "kubectl describe pod to show every step of the pod's life", func() (bool, string) {
		r := kubectlResult(t, kubectlOptions{}, "describe", "pod", "-n", ns, "described")
		for _, s := range steps {
			if !s.MatchString(r.Stdout) {
				return false, "lacks " + s.String() + ":\n" + r.Stdout + r.Stderr
			}
		}
		return true, ""
	})
}
