//go:build e2e

package clustere2e

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/microlet/microlet/internal/devnode"
)

// metricsServerObjects are metrics-server's RBAC and registration from its
// release manifests (sigs.k8s.io/metrics-server v0.8.0 manifests/base:
// rbac.yaml, apiservice.yaml, service.yaml), with one change: the process
// runs on this machine's loopback, not in a pod, so its Service is an
// ExternalName of localhost. An Endpoints or EndpointSlice may not point at
// a loopback address, and the aggregator resolves an ExternalName Service
// to the name itself.
func metricsServerObjects(port int) string {
	return `apiVersion: v1
kind: ServiceAccount
metadata: {name: metrics-server, namespace: kube-system}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: metrics-server-auth-reader, namespace: kube-system}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: extension-apiserver-authentication-reader}
subjects: [{kind: ServiceAccount, name: metrics-server, namespace: kube-system}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "metrics-server:system:auth-delegator"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:auth-delegator"}
subjects: [{kind: ServiceAccount, name: metrics-server, namespace: kube-system}]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "system:metrics-server"}
rules:
- apiGroups: [""]
  resources: [nodes/metrics]
  verbs: [get]
- apiGroups: [""]
  resources: [pods, nodes]
  verbs: [get, list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "system:metrics-server"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "system:metrics-server"}
subjects: [{kind: ServiceAccount, name: metrics-server, namespace: kube-system}]
---
apiVersion: v1
kind: Service
metadata: {name: metrics-server, namespace: kube-system}
spec:
  type: ExternalName
  externalName: localhost
  ports: [{name: https, port: ` + strconv.Itoa(port) + `, protocol: TCP}]
`
}

// metricsServerAPIService registers metrics.k8s.io as the release manifest
// does, at the port the process listens on.
func metricsServerAPIService(port int) string {
	return `apiVersion: apiregistration.k8s.io/v1
kind: APIService
metadata: {name: v1beta1.metrics.k8s.io}
spec:
  service: {name: metrics-server, namespace: kube-system, port: ` + strconv.Itoa(port) + `}
  group: metrics.k8s.io
  version: v1beta1
  insecureSkipTLSVerify: true
  groupPriorityMinimum: 100
  versionPriority: 100
`
}

// TestMetricsServer runs metrics-server v0.8.0 (built from its module by
// hack/tools/build.sh) against the control plane with its release
// manifests' flags and RBAC, authenticated as its service account. It
// scrapes the node's /metrics/resource with that account's token (the node
// API reviews it with TokenReview and SubjectAccessReview) and verifies the
// node's serving certificate, issued by the cluster's CA through
// server_tls_bootstrap, against the CA of its kubeconfig. `kubectl top pod`
// and `kubectl top node` then show a pod's and the node's cpu and memory,
// within 10% of what their cgroups' own counters say over the same window.
func TestMetricsServer(t *testing.T) {
	t.Parallel()
	c := cluster(t)
	bin := clusterTool(t, "metrics-server")
	n := startNode(t, nodeOptions{Settings: map[string]string{"server_tls_bootstrap": "true"}})
	approveServingCertificate(t, n)
	waitReady(t, n, "")

	port := freePort(t)
	objects := filepath.Join(t.TempDir(), "metrics-server.yaml")
	if err := os.WriteFile(objects, []byte(metricsServerObjects(port)), 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "apply", "-f", objects)
	t.Cleanup(func() { kubectl(t, "delete", "--ignore-not-found", "--wait=false", "-f", objects) })
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	kubeconfig, err := c.ServiceAccountKubeconfig(ctx, "kube-system", "metrics-server")
	if err != nil {
		t.Fatal(err)
	}
	ms := startDaemon(t, bin,
		"--cert-dir="+t.TempDir(), "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port),
		// The release manifest's.
		"--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname", "--kubelet-use-node-status-port",
		"--metric-resolution=15s",
		// In a pod these come from its service account (in-cluster config).
		"--kubeconfig="+kubeconfig, "--authentication-kubeconfig="+kubeconfig, "--authorization-kubeconfig="+kubeconfig)
	n.Eventually("metrics-server listening", func() (bool, string) {
		if err := ms.running(); err != nil {
			t.Fatalf("metrics-server exited: %v", err)
		}
		conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			return false, err.Error()
		}
		conn.Close()
		return true, ""
	})
	// Registered once it serves, and removed before it stops: an
	// aggregated API that does not answer makes every client's discovery
	// complain, other tests' kubectl included.
	apiService := filepath.Join(t.TempDir(), "apiservice.yaml")
	if err := os.WriteFile(apiService, []byte(metricsServerAPIService(port)), 0o644); err != nil {
		t.Fatal(err)
	}
	kubectl(t, "apply", "-f", apiService)
	t.Cleanup(func() { kubectl(t, "delete", "--ignore-not-found", "-f", apiService) })

	// A pod that holds 32 MiB in /dev/shm and spins under a 100m cpu limit.
	ns := testNamespace(t)
	spec := apiPodSpec(n, v1.Container{Name: "burn", Image: devnode.DefaultTestImage, Command: []string{"sh", "-c",
		"dd if=/dev/zero of=/dev/shm/fill bs=1048576 count=32 2>/dev/null; while :; do :; done"}})
	spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceCPU: resource.MustParse("100m")}
	pod, err := c.Admin.CoreV1().Pods(ns).Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "burn"}, Spec: spec}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitAPIPod(t, n, ns, "burn", "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	podSamples := sampleCgroup(t, podCgroup(t, n.CgroupRoot, string(pod.UID)))
	nodeSamples := sampleCgroup(t, rootCgroup())
	started := time.Now()

	var usage metricsUsage
	var top []string
	n.Eventually("kubectl top pod shows the pod measured after sampling began", func() (bool, string) {
		if err := ms.running(); err != nil {
			t.Fatalf("metrics-server exited: %v", err)
		}
		var seen string
		usage, top, seen = consistentTop(t, fmt.Sprintf("/apis/metrics.k8s.io/v1beta1/namespaces/%s/pods/burn", ns),
			"top", "pod", "-n", ns, "burn", "--no-headers")
		return usage.Timestamp.Add(-usage.Window).After(started), seen
	})
	checkTop(t, "kubectl top pod", usage, top, podSamples)

	n.Eventually("kubectl top node shows the node measured after sampling began", func() (bool, string) {
		var seen string
		usage, top, seen = consistentTop(t, "/apis/metrics.k8s.io/v1beta1/nodes/"+n.Name, "top", "node", n.Name, "--no-headers")
		return usage.Timestamp.Add(-usage.Window).After(started), seen
	})
	checkTop(t, "kubectl top node", usage, top, nodeSamples)
}

// approveServingCertificate approves the node's kubelet-serving CSR, as an
// operator does, and waits until the node API serves the certificate the
// cluster's CA issued: metrics-server verifies it against that CA.
func approveServingCertificate(t *testing.T, n *clusterNode) {
	t.Helper()
	var name string
	n.Eventually("the node asks for a serving certificate", func() (bool, string) {
		requests := nodeCSRs(t, n.Cluster, certificatesv1.KubeletServingSignerName, "system:node:"+n.Name)
		if len(requests) == 0 {
			return false, "no kubelet-serving CSR of the node"
		}
		name = requests[0].Name
		return true, ""
	})
	kubectl(t, "certificate", "approve", name)
	n.Eventually("the node API serves the issued certificate", func() (bool, string) {
		return servesIssued(n.Cluster, n), fmt.Sprintf("serving %s", n.ServingChain(t)[0].Subject)
	})
}

// metricsUsage is a PodMetrics' or NodeMetrics' sample: cpu in cores and
// memory in bytes (summed over a pod's containers), over the window that
// ends at Timestamp.
type metricsUsage struct {
	Timestamp time.Time
	Window    time.Duration
	CPU       float64
	Memory    float64
}

// consistentTop reads the metrics API object at raw, runs kubectl with
// args, and reads raw again, until both reads show the same sample, so
// that kubectl printed that sample. It returns the sample, kubectl's
// columns, and what it saw for a failure message.
func consistentTop(t *testing.T, raw string, args ...string) (metricsUsage, []string, string) {
	t.Helper()
	for range 5 {
		before, err := readMetrics(t, raw)
		if err != nil {
			return metricsUsage{}, nil, err.Error()
		}
		stdout, stderr, err := kubectlOutput(t, args...)
		if err != nil {
			return metricsUsage{}, nil, fmt.Sprintf("%v: %s", err, stderr)
		}
		after, err := readMetrics(t, raw)
		if err != nil {
			return metricsUsage{}, nil, err.Error()
		}
		if before.Timestamp.Equal(after.Timestamp) {
			return after, strings.Fields(stdout), stdout
		}
	}
	return metricsUsage{}, nil, "the sample changed under every kubectl top"
}

func readMetrics(t *testing.T, raw string) (metricsUsage, error) {
	stdout, stderr, err := kubectlOutput(t, "get", "--raw", raw)
	if err != nil {
		return metricsUsage{}, fmt.Errorf("%v: %s", err, stderr)
	}
	var obj struct {
		Timestamp  time.Time                         `json:"timestamp"`
		Window     metav1.Duration                   `json:"window"`
		Usage      v1.ResourceList                   `json:"usage"`
		Containers []struct{ Usage v1.ResourceList } `json:"containers"`
	}
	if err := json.Unmarshal([]byte(stdout), &obj); err != nil {
		return metricsUsage{}, fmt.Errorf("%s: %v", stdout, err)
	}
	u := metricsUsage{Timestamp: obj.Timestamp, Window: obj.Window.Duration}
	lists := []v1.ResourceList{obj.Usage}
	for _, c := range obj.Containers {
		lists = append(lists, c.Usage)
	}
	for _, l := range lists {
		if q, ok := l[v1.ResourceCPU]; ok {
			u.CPU += q.AsApproximateFloat64()
		}
		if q, ok := l[v1.ResourceMemory]; ok {
			u.Memory += q.AsApproximateFloat64()
		}
	}
	return u, nil
}

var topColumns = regexp.MustCompile(`^(\d+)m$|^(\d+)Mi$`)

// checkTop compares a metrics API sample, and kubectl top's columns
// (NAME CPU(cores) [CPU%] MEMORY(bytes) ...) showing it, with the cgroup's
// counters: its cpu rate over the sample's window and its working set
// around the sample's time, within 10%.
func checkTop(t *testing.T, what string, u metricsUsage, columns []string, samples *cgroupSampler) {
	t.Helper()
	cpu, err := samples.cpuRate(u.Timestamp.Add(-u.Window), u.Timestamp)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	lo, hi, err := samples.workingSetAround(u.Timestamp)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	t.Logf("%s: %v; the metrics API: cpu %.4f cores, memory %.0f bytes over %s to %s; the cgroup: cpu %.4f cores, working set %d..%d bytes",
		what, columns, u.CPU, u.Memory, u.Window, u.Timestamp.Format(time.RFC3339Nano), cpu, lo, hi)
	if !within(u.CPU, cpu, cpu, 0) {
		t.Errorf("%s: cpu %.4f cores, the cgroup's counter %.4f cores over the same window", what, u.CPU, cpu)
	}
	if !within(u.Memory, float64(lo), float64(hi), 0) {
		t.Errorf("%s: memory %.0f bytes, the cgroup's working set %d..%d bytes then", what, u.Memory, lo, hi)
	}
	// What kubectl printed: millicores, and Mi.
	var shownCPU, shownMemory float64
	for _, col := range columns[1:] {
		m := topColumns.FindStringSubmatch(col)
		switch {
		case m == nil:
		case m[1] != "":
			v, _ := strconv.ParseFloat(m[1], 64)
			shownCPU = v / 1000
		case m[2] != "":
			v, _ := strconv.ParseFloat(m[2], 64)
			shownMemory = v * (1 << 20)
		}
	}
	if !within(shownCPU, cpu, cpu, cpuSlack) || !within(shownMemory, float64(lo), float64(hi), memorySlack) {
		t.Errorf("%s printed %v: cpu %.4f cores, memory %.0f bytes; the cgroup: %.4f cores, %d..%d bytes",
			what, columns, shownCPU, shownMemory, cpu, lo, hi)
	}
}

// Rounding kubectl top's columns may add: a millicore, a MiB.
const (
	cpuSlack    = 0.001
	memorySlack = 1 << 20
)

// within says whether v is within 10% of [lo, hi], give or take slack.
func within(v, lo, hi, slack float64) bool {
	return v >= lo*0.9-slack && v <= hi*1.1+slack
}
