//go:build e2e

package nodeapie2e

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/microlet/microlet/internal/devcluster"
)

// securedPaths are a request to every endpoint of the secure port.
var securedPaths = []struct{ method, path string }{
	{"GET", "/healthz"}, {"GET", "/pods"}, {"GET", "/runningpods/"}, {"GET", "/spec/"}, {"GET", "/stats/summary"},
	{"GET", "/metrics"}, {"GET", "/metrics/cadvisor"}, {"GET", "/metrics/resource"}, {"GET", "/metrics/probes"},
	{"GET", "/configz"}, {"GET", "/logs/"}, {"GET", "/containerLogs/default/p/c"}, {"POST", "/exec/default/p/c?output=1"},
	{"POST", "/attach/default/p/c?output=1"}, {"POST", "/portForward/default/p"}, {"POST", "/run/default/p/c?cmd=id"},
	{"GET", "/no-such-endpoint"},
}

// TestSecurity runs the node API against a real API server: x509 and
// bearer-token authentication (TokenReview), Webhook authorization
// (SubjectAccessReview on RBAC), the create verb for streaming upgrades,
// escapes from the log directories, and bad requests.
func TestSecurity(t *testing.T) {
	cluster := devcluster.StartT(t)
	n := startAPINode(t, nodeOptions{cluster: cluster})
	n.RunPod("target", map[string]string{"app": "echo secret-free log line; sleep 100000"})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	user := func(name string) rbacv1.Subject { return rbacv1.Subject{Kind: rbacv1.UserKind, Name: name} }

	t.Run("no credentials: 401 everywhere but the healthz port", func(t *testing.T) {
		anonymous := n.Client(devcluster.KeyPair{})
		for _, p := range securedPaths {
			if code, body := Do(t, anonymous, p.method, n.Secure+p.path, nil); code != 401 || body != "Unauthorized" {
				t.Errorf("%s %s = %d %q, want 401 Unauthorized", p.method, p.path, code, body)
			}
		}
		if code, _ := Do(t, http.DefaultClient, "GET", "http://"+n.HealthzAddr+"/healthz", nil); code != 200 {
			t.Errorf("the healthz port: %d", code)
		}
	})

	t.Run("a client certificate of another CA is rejected", func(t *testing.T) {
		other, _ := devcluster.NewCA("impostor")
		forged, _ := other.ClientCert("devcluster-admin", "system:masters")
		cert, err := forged.TLS()
		if err != nil {
			t.Fatal(err)
		}
		// Sent whatever CAs the server names, as an attacker would.
		cfg := n.tlsConfig(devcluster.KeyPair{})
		cfg.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return &cert, nil }
		client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{TLSClientConfig: cfg}}
		if code, body := Do(t, client, "GET", n.Secure+"/pods", nil); code != 401 {
			t.Errorf("GET /pods with a forged certificate: %d %q", code, body)
		}
	})

	t.Run("RBAC decides through SubjectAccessReview", func(t *testing.T) {
		bobCert, _ := cluster.ClientCert("bob", "developers")
		bob := n.Client(bobCert)
		code, body := Do(t, bob, "GET", n.Secure+"/pods", nil)
		if code != 403 || body != "Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[pods proxy])\n" {
			t.Errorf("GET /pods without a grant: %d %q", code, body)
		}
		if err := cluster.GrantNodeAccess(ctx, "bob-stats", user("bob"), []string{"get"}, "stats"); err != nil {
			t.Fatal(err)
		}
		if code, body := Do(t, bob, "GET", n.Secure+"/stats/summary", nil); code != 200 {
			t.Errorf("GET /stats/summary with nodes/stats get: %d %q", code, body)
		}
		if code, _ := Do(t, bob, "GET", n.Secure+"/metrics", nil); code != 403 {
			t.Errorf("GET /metrics with only nodes/stats: %d", code)
		}
		if err := cluster.GrantNodeAccess(ctx, "developers-pods", rbacv1.Subject{Kind: rbacv1.GroupKind, Name: "developers"}, []string{"get"}, "pods"); err != nil {
			t.Fatal(err)
		}
		// Bob's denial stays cached for cache_unauthorized_ttl (30s); a new
		// member of his group is asked afresh.
		if code, _ := Do(t, bob, "GET", n.Secure+"/pods", nil); code != 403 {
			t.Errorf("GET /pods again within the denial's TTL: %d, want the cached 403", code)
		}
		carolCert, _ := cluster.ClientCert("carol", "developers")
		for _, path := range []string{"/pods", "/runningpods/"} {
			if code, body := Do(t, n.Client(carolCert), "GET", n.Secure+path, nil); code != 200 {
				t.Errorf("GET %s with nodes/pods get for carol's group: %d %q", path, code, body)
			}
		}
	})

	t.Run("a service account token authenticates through TokenReview", func(t *testing.T) {
		token, err := cluster.ServiceAccountToken(ctx, "default", "log-reader")
		if err != nil {
			t.Fatal(err)
		}
		if err := cluster.GrantNodeAccess(ctx, "log-reader", rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "log-reader", Namespace: "default"},
			[]string{"get"}, "proxy"); err != nil {
			t.Fatal(err)
		}
		bearer := func(token string) http.Header { return http.Header{"Authorization": {"Bearer " + token}} }
		anonymous := n.Client(devcluster.KeyPair{})
		code, body := Do(t, anonymous, "GET", n.Secure+"/containerLogs/"+PodPath("target")+"/app", bearer(token))
		if code != 200 || body != "secret-free log line\n" {
			t.Errorf("container logs with the token: %d %q", code, body)
		}
		code, body = Do(t, anonymous, "POST", n.Secure+"/run/"+PodPath("target")+"/app?cmd=id", bearer(token))
		if code != 403 || !strings.Contains(body, "user=system:serviceaccount:default:log-reader, verb=create") {
			t.Errorf("POST /run with nodes/proxy get only: %d %q", code, body)
		}
		if code, _ := Do(t, anonymous, "GET", n.Secure+"/pods", bearer(token+"x")); code != 401 {
			t.Errorf("a forged token: %d, want 401", code)
		}
	})

	t.Run("a WebSocket GET to exec needs create", func(t *testing.T) {
		getterCert, _ := cluster.ClientCert("getter")
		creatorCert, _ := cluster.ClientCert("creator")
		if err := cluster.GrantNodeAccess(ctx, "getter", user("getter"), []string{"get"}, "proxy"); err != nil {
			t.Fatal(err)
		}
		if err := cluster.GrantNodeAccess(ctx, "creator", user("creator"), []string{"get", "create"}, "proxy"); err != nil {
			t.Fatal(err)
		}
		exec := n.streamURL(t, "exec", "target", "app", []string{"echo", "ran"}, false, false)
		wsURL := strings.Replace(exec.String(), "https://", "wss://", 1)
		for _, protocol := range []string{"v5.channel.k8s.io", "v4.channel.k8s.io"} {
			d := websocket.Dialer{TLSClientConfig: n.tlsConfig(getterCert), Subprotocols: []string{protocol}, HandshakeTimeout: streamTimeout}
			ws, resp, err := d.Dial(wsURL, nil)
			if err == nil {
				ws.Close()
				t.Errorf("%s: a WebSocket exec with nodes/proxy get only was upgraded", protocol)
			} else if resp == nil || resp.StatusCode != 403 {
				t.Errorf("%s: a WebSocket exec with nodes/proxy get only: %v %v, want 403", protocol, err, resp)
			}
		}
		spdyGetter, err := remotecommand.NewSPDYExecutor(n.RESTConfig(getterCert), "GET", exec)
		if err != nil {
			t.Fatal(err)
		}
		if err := spdyGetter.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: io.Discard}); err == nil {
			t.Error("an SPDY exec by GET with nodes/proxy get only ran")
		}
		executor, err := remotecommand.NewWebSocketExecutor(n.RESTConfig(creatorCert), "GET", exec.String())
		if err != nil {
			t.Fatal(err)
		}
		var out strings.Builder
		if err := executor.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out, Stderr: io.Discard}); err != nil || out.String() != "ran\n" {
			t.Errorf("a WebSocket exec with nodes/proxy create: %q %v", out.String(), err)
		}
	})

	t.Run("no escape from the log directories", func(t *testing.T) {
		secret := filepath.Join(t.TempDir(), "shadow")
		os.WriteFile(secret, []byte("2024-01-01T00:00:00Z stdout F TOP-SECRET\n"), 0o600)
		os.Symlink(secret, filepath.Join(n.NodeLogs, "planted.log"))
		os.Symlink("/", filepath.Join(n.NodeLogs, "rootfs"))
		for _, path := range []string{"/logs/planted.log", "/logs/rootfs/etc/shadow", "/logs/../../../etc/shadow",
			"/logs/%2e%2e/%2e%2e/etc/shadow", "/logs/..%2f..%2fetc%2fshadow", "/logs//etc/shadow"} {
			code, body := n.Get(path)
			if code == 200 || strings.Contains(body, "TOP-SECRET") || strings.Contains(body, "root:") {
				t.Errorf("GET %s = %d %q", path, code, firstLines(body, 2))
			}
		}
		// A container's log replaced by a link out of its pod's directory.
		pod := n.Pod("target")
		dir := filepath.Join(n.PodLogsDir, fmt.Sprintf("default_%s_%s", pod.Name, pod.UID), "app")
		if err := os.Rename(filepath.Join(dir, "0.log"), filepath.Join(dir, "0.log.moved")); err != nil {
			t.Fatal(err)
		}
		os.Symlink(secret, filepath.Join(dir, "0.log"))
		code, body := n.Get("/containerLogs/" + PodPath("target") + "/app")
		if code == 200 || strings.Contains(body, "TOP-SECRET") {
			t.Errorf("container logs through a planted symlink: %d %q", code, body)
		}
		for _, path := range []string{"/containerLogs/default/..%2f..%2fetc/passwd/app", "/containerLogs/default/" + url.PathEscape("../../etc") + "/x"} {
			if code, body := n.Get(path); code == 200 {
				t.Errorf("GET %s = %d %q", path, code, body)
			}
		}
	})

	t.Run("bad requests fail cleanly", func(t *testing.T) {
		big := http.Header{"X-Big": {strings.Repeat("a", 2<<20)}}
		if code, _ := Do(t, n.Admin, "GET", n.Secure+"/pods", big); code != http.StatusRequestHeaderFieldsTooLarge {
			t.Errorf("2 MiB of headers: %d, want 431", code)
		}
		req, _ := http.NewRequest("POST", n.Secure+"/stats/summary", strings.NewReader(strings.Repeat("x", 1<<20)))
		if resp, err := n.Admin.Do(req); err != nil || resp.StatusCode != http.StatusRequestEntityTooLarge {
			t.Errorf("a 1 MiB body: %v %v, want 413", resp, err)
		} else {
			resp.Body.Close()
		}
		if code, _ := n.Get("/containerLogs/" + PodPath("target") + "/app?sinceTime=never"); code != 400 {
			t.Errorf("a malformed query: %d, want 400", code)
		}
		if code, _ := Do(t, n.Admin, "OPTIONS", n.Secure+"/pods", nil); code != 405 {
			t.Errorf("OPTIONS: %d, want 405", code)
		}
		if code := rawRequest(t, n, "GET /pods%zz HTTP/1.1\r\nHost: x\r\n\r\n"); code != 400 {
			t.Errorf("a malformed path: %d, want 400", code)
		}
		if code := rawRequest(t, n, "GARBAGE\r\n\r\n"); code != 400 {
			t.Errorf("a malformed request line: %d, want 400", code)
		}
		// The node still serves.
		if code, _ := n.Get("/healthz"); code != 200 {
			t.Errorf("after bad requests, /healthz: %d", code)
		}
	})
}

// rawRequest writes raw bytes to the secure port as admin and returns the
// status code of the answer.
func rawRequest(t *testing.T, n *apiNode, raw string) int {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 30 * time.Second}, "tcp", strings.TrimPrefix(n.Secure, "https://"), n.tlsConfig(n.admin))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(conn, raw); err != nil {
		t.Fatal(err)
	}
	var code int
	if _, err := fmt.Fscanf(conn, "HTTP/1.1 %d", &code); err != nil {
		t.Fatalf("reading the answer to %q: %v", raw, err)
	}
	return code
}
