//go:build e2e

package nodeapie2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/rest"

	"github.com/microlet/microlet/internal/devcluster"
	"github.com/microlet/microlet/internal/freeport"
	pressuree2e "github.com/microlet/microlet/test/e2e/pressure"
)

// nodeName is the pressure harness's node name: pods run as <name>-<node>.
const nodeName = pressuree2e.NodeName

// apiNode is a test node with its node API on loopback ports: the secure
// port with a serving certificate of the test's CA, and the read-only port.
type apiNode struct {
	*pressuree2e.Node
	t testing.TB
	// Secure and ReadOnly are the listeners' base URLs.
	Secure, ReadOnly string
	// NodeLogs is the directory /logs/ serves.
	NodeLogs string
	// CA signed the serving certificate and the clients' certificates
	// microlet accepts.
	CA *devcluster.CA
	// Admin presents the client certificate of "admin" (group
	// system:masters): everything is allowed to it.
	Admin *http.Client
	admin devcluster.KeyPair
}

// nodeOptions say how a test's node API is set up.
type nodeOptions struct {
	// cluster, when set, authenticates bearer tokens and authorizes
	// requests (mode Webhook) through its API server, and issues the
	// client certificates; without it requests are authorized
	// AlwaysAllow, client certificates come from a CA of the test's own.
	cluster *devcluster.Cluster
	// settings are more top-level config keys, HCL values.
	settings map[string]string
}

func startAPINode(t testing.TB, opts nodeOptions) *apiNode {
	t.Helper()
	dir := t.TempDir()
	n := &apiNode{t: t, NodeLogs: filepath.Join(dir, "node-logs")}
	settings := map[string]string{"address": `"127.0.0.1"`, "node_log_dir": quote(n.NodeLogs)}
	if opts.cluster != nil {
		n.CA = opts.cluster.CA
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		// The node's own identity reviews tokens and access.
		if err := opts.cluster.AllowReviews(ctx, "microlet-node"); err != nil {
			t.Fatal(err)
		}
		kubeconfig, err := opts.cluster.Kubeconfig("microlet-node")
		if err != nil {
			t.Fatal(err)
		}
		settings["kubeconfig"] = quote(kubeconfig)
		settings["authorization"] = `{ mode = "Webhook" }`
	} else {
		var err error
		if n.CA, err = devcluster.NewCA("nodeapi-e2e"); err != nil {
			t.Fatal(err)
		}
		settings["authorization"] = `{ mode = "AlwaysAllow" }`
	}
	caFile := filepath.Join(dir, "client-ca.crt")
	if err := os.WriteFile(caFile, n.CA.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	settings["authentication"] = fmt.Sprintf(`{ x509 = { client_ca_file = %s } }`, quote(caFile))
	serving, err := n.CA.ServingCert(nodeName, []string{"localhost"}, []net.IP{net.ParseIP("127.0.0.1")})
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile, err := serving.WriteFiles(dir, "serving")
	if err != nil {
		t.Fatal(err)
	}
	settings["tls_cert_file"], settings["tls_private_key_file"] = quote(certFile), quote(keyFile)
	ports := freePorts(t, 2)
	settings["port"], settings["read_only_port"] = fmt.Sprint(ports[0]), fmt.Sprint(ports[1])
	for k, v := range opts.settings {
		settings[k] = v
	}
	if err := os.MkdirAll(n.NodeLogs, 0o755); err != nil {
		t.Fatal(err)
	}
	n.Secure = fmt.Sprintf("https://127.0.0.1:%d", ports[0])
	n.ReadOnly = fmt.Sprintf("http://127.0.0.1:%d", ports[1])
	if n.admin, err = n.CA.ClientCert("admin", "system:masters"); err != nil {
		t.Fatal(err)
	}
	n.Admin = n.Client(n.admin)
	n.Node = pressuree2e.Start(t, pressuree2e.Options{Settings: settings})
	return n
}

// Client is an HTTPS client of the secure port presenting pair (or no
// certificate, for a zero pair).
func (n *apiNode) Client(pair devcluster.KeyPair) *http.Client {
	n.t.Helper()
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: n.tlsConfig(pair)}}
}

func (n *apiNode) tlsConfig(pair devcluster.KeyPair) *tls.Config {
	n.t.Helper()
	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(n.CA.PEM)
	c := &tls.Config{RootCAs: roots}
	if pair.CertPEM != nil {
		cert, err := pair.TLS()
		if err != nil {
			n.t.Fatal(err)
		}
		c.Certificates = []tls.Certificate{cert}
	}
	return c
}

// RESTConfig is client-go's config for the secure port with pair's
// identity, for the remotecommand and port-forward clients.
func (n *apiNode) RESTConfig(pair devcluster.KeyPair) *rest.Config {
	return &rest.Config{Host: n.Secure, TLSClientConfig: rest.TLSClientConfig{CAData: n.CA.PEM, CertData: pair.CertPEM, KeyData: pair.KeyPEM}}
}

// Do sends a request and returns the status and body.
func Do(t testing.TB, c *http.Client, method, url string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// Get GETs a path of the secure port as admin.
func (n *apiNode) Get(path string) (int, string) {
	n.t.Helper()
	return Do(n.t, n.Admin, http.MethodGet, n.Secure+path, nil)
}

// GetWithin GETs a path of the secure port as admin, giving up after
// timeout: a hang is an answer (code 0 and the error) rather than a stuck
// test.
func (n *apiNode) GetWithin(timeout time.Duration, path string) (int, string) {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, n.Secure+path, nil)
	if err != nil {
		n.t.Fatal(err)
	}
	resp, err := n.Admin.Do(req)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// Pod is the named pushed pod as /pods on the secure port lists it, nil if
// it is not there.
func (n *apiNode) Pod(name string) *v1.Pod {
	n.t.Helper()
	code, body := n.Get("/pods")
	if code != http.StatusOK {
		n.t.Fatalf("GET /pods: %d %s", code, body)
	}
	var list v1.PodList
	if err := json.Unmarshal([]byte(body), &list); err != nil {
		n.t.Fatalf("GET /pods: %v", err)
	}
	for i := range list.Items {
		if list.Items[i].Name == name+"-"+nodeName {
			return &list.Items[i]
		}
	}
	return nil
}

// WaitPod waits until the named pod is listed and cond holds for it.
func (n *apiNode) WaitPod(name, what string, cond func(*v1.Pod) bool) *v1.Pod {
	n.t.Helper()
	var found *v1.Pod
	n.Eventually(fmt.Sprintf("pod %s: %s", name, what), func() (bool, string) {
		found = n.Pod(name)
		if found == nil {
			return false, "not on /pods"
		}
		return cond(found), pressuree2e.DescribePod(found)
	})
	return found
}

// RunPod pushes a pod of busybox containers, each running its script, and
// waits until every container runs.
func (n *apiNode) RunPod(name string, containers map[string]string) *v1.Pod {
	n.t.Helper()
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: default\nspec:\n", name)
	b.WriteString("  terminationGracePeriodSeconds: 1\n  containers:\n")
	for c, script := range containers {
		fmt.Fprintf(&b, "  - name: %s\n    image: IMAGE\n    command: [\"sh\", \"-c\", %q]\n", c, script)
	}
	n.Push(b.String())
	return n.WaitPod(name, "every container runs", allRunning)
}

func allRunning(p *v1.Pod) bool {
	if p.Status.Phase != v1.PodRunning {
		return false
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Running == nil {
			return false
		}
	}
	return len(p.Status.ContainerStatuses) > 0
}

// PodPath is a pushed pod's namespace and name in the API's paths.
func PodPath(name string) string { return "default/" + name + "-" + nodeName }

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func freePorts(t testing.TB, n int) []int {
	t.Helper()
	ports, err := freeport.Ports(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}
