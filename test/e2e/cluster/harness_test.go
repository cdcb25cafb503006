//go:build e2e

package clustere2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/microlet/microlet/internal/devcluster"
	"github.com/microlet/microlet/internal/devnode"
	"github.com/microlet/microlet/internal/freeport"
	pressuree2e "github.com/microlet/microlet/test/e2e/pressure"
)

// nodeOptions say how a test's node joins.
type nodeOptions struct {
	// Name is the node's name; default: the test's name, made a DNS
	// label, with a number.
	Name string
	// Cluster is the control plane to join; default the package's.
	Cluster *devcluster.Cluster
	// Bootstrap joins by TLS bootstrap: a bootstrap kubeconfig with a new
	// bootstrap token, and a kubeconfig path with nothing there yet.
	Bootstrap bool
	// Settings are more top-level config keys, HCL values; they override
	// the harness's.
	Settings map[string]string
	// Plugins and Images as in pressuree2e.Options.
	Plugins []pressuree2e.Plugin
	Images  []devnode.Image
	// RegistryCAs and Env as in pressuree2e.Options.
	RegistryCAs map[string]string
	Env         []string
}

// clusterNode is a microlet joined to the control plane.
type clusterNode struct {
	*pressuree2e.Node
	// Cluster is the control plane it joined.
	Cluster *devcluster.Cluster
	// Secure is the node API's HTTPS base URL on 127.0.0.1.
	Secure string
	// CertDir is the node's cert_dir.
	CertDir string
	// Kubeconfig is the node's kubeconfig.
	Kubeconfig string
	// readerToken is a service account's token allowed to read the node
	// API's pods, made by the first CallAPIServer.
	readerToken string
}

// startNode starts a microlet node on a containerd of its own and joins
// it to the control plane with a plain kubeconfig: a client certificate
// of user system:node:<name>, group system:nodes, from the cluster's CA,
// as TLS bootstrap would have issued (or, with Bootstrap, by TLS
// bootstrap). Its node API listens on a loopback port with the kubelet's
// defaults in a kubeadm cluster: client certificates of the cluster's CA,
// bearer tokens reviewed and requests authorized by the API server, a
// self-signed serving pair in cert_dir. Its address (node_ip) is
// 127.0.0.1, so that the API server reaches its node API (logs, exec) at
// the address the node reports. Everything stops and goes when the test
// ends.
func startNode(t testing.TB, opts nodeOptions) *clusterNode {
	t.Helper()
	c := opts.Cluster
	if c == nil {
		c = cluster(t)
	}
	if opts.Name == "" {
		opts.Name = nodeName(t)
	}
	dir := t.TempDir()
	n := &clusterNode{Cluster: c, CertDir: filepath.Join(dir, "pki")}
	settings := map[string]string{}
	var err error
	if opts.Bootstrap {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		bootstrap, err := c.BootstrapKubeconfig(ctx, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		settings["bootstrap_kubeconfig"] = quote(bootstrap)
		n.Kubeconfig = filepath.Join(dir, "kubeconfig")
	} else if n.Kubeconfig, err = c.NodeKubeconfig(opts.Name); err != nil {
		t.Fatal(err)
	}
	port := freePort(t)
	n.Secure = fmt.Sprintf("https://127.0.0.1:%d", port)
	maps.Copy(settings, pressuree2e.JoinSettings(c, n.Kubeconfig, n.CertDir, "127.0.0.1", port))
	maps.Copy(settings, opts.Settings)
	n.Node = pressuree2e.Start(t, pressuree2e.Options{NodeName: opts.Name, Settings: settings,
		Plugins: opts.Plugins, Images: opts.Images, RegistryCAs: opts.RegistryCAs, Env: opts.Env})
	return n
}

// nodeSeq tells apart the nodes of one test.
var nodeSeq atomic.Int64

// nodeName is a node name for t: its name as a DNS label, and a number.
func nodeName(t testing.TB) string {
	name := strings.Trim(nonDNS.ReplaceAllString(strings.ToLower(t.Name()), "-"), "-")
	return fmt.Sprintf("%.40s-%d", name, nodeSeq.Add(1))
}

var nonDNS = regexp.MustCompile(`[^a-z0-9]+`)

// ServingChain is the certificate chain the node API presents, leaf first.
func (n *clusterNode) ServingChain(t testing.TB) []*x509.Certificate {
	t.Helper()
	conn, err := tls.Dial("tcp", strings.TrimPrefix(n.Secure, "https://"), &tls.Config{InsecureSkipVerify: true})
	if err != nil {
		t.Fatalf("node API: %v", err)
	}
	defer conn.Close()
	return conn.ConnectionState().PeerCertificates
}

// Get GETs a path of the node API with a bearer token, trusting the chain
// the node presents now (self-signed or issued) and checking that it
// names the node.
func (n *clusterNode) Get(t testing.TB, path, token string) (int, string) {
	t.Helper()
	roots := x509.NewCertPool()
	for _, c := range n.ServingChain(t) {
		roots.AddCert(c)
	}
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: roots, ServerName: n.Name}}}
	req, err := http.NewRequest(http.MethodGet, n.Secure+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("GET %s: %v", path, err)
	}
	return resp.StatusCode, string(body)
}

// CallAPIServer makes the node call the API server with its client: a
// GET of its node API's /pods with a service account's bearer token, which
// the node reviews (TokenReview, SubjectAccessReview) with the API
// server. It fails the test unless the node answers 200.
func (n *clusterNode) CallAPIServer(t testing.TB) {
	t.Helper()
	if n.readerToken == "" {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		account := n.Name + "-reader"
		token, err := n.Cluster.ServiceAccountToken(ctx, "default", account)
		if err != nil {
			t.Fatal(err)
		}
		subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: account}
		if err := n.Cluster.GrantNodeAccess(ctx, account, subject, []string{"get"}, "proxy"); err != nil {
			t.Fatal(err)
		}
		n.readerToken = token
	}
	if code, body := n.Get(t, "/pods", n.readerToken); code != http.StatusOK {
		t.Fatalf("GET /pods with a service account's token: %d %s", code, body)
	}
}

// APICalls are the requests of the node's client (user
// system:node:<name>) that the API server has answered so far.
func (n *clusterNode) APICalls(t testing.TB) []devcluster.AuditEvent {
	t.Helper()
	events, err := n.Cluster.AuditEvents("system:node:" + n.Name)
	if err != nil {
		t.Fatal(err)
	}
	return events
}

// adminKubeconfig is written once for the package: tests run kubectl in
// parallel, and writing the file again while another kubectl reads it
// gives that one half a file.
var adminKubeconfig = sync.OnceValues(func() (string, error) {
	return controlPlane.Kubeconfig("e2e-admin", "system:masters")
})

// kubectl runs the control plane's kubectl as the cluster's admin and
// returns its output; a failure fails the test.
func kubectl(t testing.TB, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := kubectlCommand(t, ctx, nil, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// kubectlArgs are the control plane's kubectl as the cluster's admin, and
// args: a command line.
func kubectlArgs(t testing.TB, args ...string) []string {
	t.Helper()
	cluster(t)
	kubeconfig, err := adminKubeconfig()
	if err != nil {
		t.Fatal(err)
	}
	bin, err := devnode.KubeToolsDir()
	if err != nil {
		t.Fatal(err)
	}
	return append([]string{filepath.Join(bin, "kubectl"), "--kubeconfig", kubeconfig}, args...)
}

// kubectlCommand is kubectl as the cluster's admin, not started, with env
// added to the environment.
func kubectlCommand(t testing.TB, ctx context.Context, env []string, args ...string) *exec.Cmd {
	t.Helper()
	line := kubectlArgs(t, args...)
	cmd := exec.CommandContext(ctx, line[0], line[1:]...)
	cmd.Env = append(os.Environ(), env...)
	return cmd
}

// eventually polls cond until it holds, failing t with what it saw last
// after pressuree2e.WaitTimeout. Unlike the node's Eventually, which
// fails the test that started the node, it serves subtests too.
func eventually(t testing.TB, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(pressuree2e.WaitTimeout)
	for {
		ok, seen := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("after %s still waiting for %s; last seen: %s", pressuree2e.WaitTimeout, what, seen)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func quote(s string) string {
	b, _ := json.Marshal(s)
	return string(b)
}

func freePort(t testing.TB) int {
	t.Helper()
	port, err := freeport.Port()
	if err != nil {
		t.Fatal(err)
	}
	return port
}
