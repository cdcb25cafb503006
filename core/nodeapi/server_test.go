package nodeapi

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/microlet/microlet/core/config"
	"github.com/microlet/microlet/core/nodeapi/auth"
	"github.com/microlet/microlet/internal/devcluster"
	"github.com/microlet/microlet/internal/freeport"
)

func TestSelfSignedPair(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "pki")
	certFile, keyFile, err := selfSignedPair(dir, "node-1", hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	if certFile != filepath.Join(dir, "kubelet.crt") || keyFile != filepath.Join(dir, "kubelet.key") {
		t.Errorf("files %s %s, want the kubelet's names in cert_dir", certFile, keyFile)
	}
	if info, err := os.Stat(keyFile); err != nil || info.Mode().Perm()&0o077 != 0 {
		t.Errorf("key file mode %v, %v; want no access for group and others", info.Mode(), err)
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	if err := leaf.VerifyHostname("node-1"); err != nil || !strings.HasPrefix(leaf.Subject.CommonName, "node-1@") {
		t.Errorf("certificate for %q (%v); want one for the node name", leaf.Subject.CommonName, err)
	}
	before, _ := os.ReadFile(certFile)
	if _, _, err := selfSignedPair(dir, "node-1", hclog.NewNullLogger()); err != nil {
		t.Fatal(err)
	}
	if after, _ := os.ReadFile(certFile); !bytes.Equal(before, after) {
		t.Error("the pair was made again on the second start; the kubelet keeps it")
	}
}

func TestServerTLS(t *testing.T) {
	ca, _ := devcluster.NewCA("clients")
	caFile := filepath.Join(t.TempDir(), "ca.pem")
	os.WriteFile(caFile, ca.PEM, 0o644)
	withCA, err := auth.New(auth.Options{Mode: auth.ModeAlwaysAllow, ClientCAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	cfg := &config.Config{NodeName: "n", CertDir: t.TempDir(), TLSMinVersion: "VersionTLS13",
		TLSCipherSuites: []string{"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256"}}
	c, err := serverTLS(cfg, withCA, nil, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	if c.MinVersion != tls.VersionTLS13 || len(c.CipherSuites) != 1 || c.CipherSuites[0] != tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 {
		t.Errorf("min version %x, suites %v", c.MinVersion, c.CipherSuites)
	}
	if c.ClientAuth != tls.RequestClientCert {
		t.Errorf("client auth %v with a client CA, want RequestClientCert (tokens come without a certificate)", c.ClientAuth)
	}
	hello, err := c.GetConfigForClient(&tls.ClientHelloInfo{})
	if err != nil || hello.ClientCAs == nil || !hello.ClientCAs.Equal(withCA.ClientCAs()) {
		t.Errorf("the handshake does not name the client CAs: %v", err)
	}

	without, _ := auth.New(auth.Options{Mode: auth.ModeAlwaysAllow})
	if c, _ := serverTLS(cfg, without, nil, hclog.NewNullLogger()); c.ClientAuth != tls.NoClientCert || c.GetConfigForClient != nil {
		t.Errorf("without a client CA: client auth %v", c.ClientAuth)
	}
}

// TestServerTLSIssued checks that the self-signed pair serves until the
// API server has issued a certificate, and that one after, with or
// without SNI.
func TestServerTLSIssued(t *testing.T) {
	ca, _ := devcluster.NewCA("cluster")
	pair, _ := ca.ServingCert("system:node:n", nil, []net.IP{net.ParseIP("127.0.0.1")})
	issuedPair, err := pair.TLS()
	if err != nil {
		t.Fatal(err)
	}
	var issued *tls.Certificate
	without, _ := auth.New(auth.Options{Mode: auth.ModeAlwaysAllow})
	cfg := &config.Config{NodeName: "n", CertDir: t.TempDir()}
	c, err := serverTLS(cfg, without, func() *tls.Certificate { return issued }, hclog.NewNullLogger())
	if err != nil {
		t.Fatal(err)
	}
	for _, sni := range []string{"", "n"} {
		got, err := c.GetCertificate(&tls.ClientHelloInfo{ServerName: sni})
		if err != nil || got == nil || got.Leaf == nil || got.Leaf.Issuer.CommonName == "cluster" {
			t.Errorf("SNI %q before issue: %v, %v; want the self-signed pair", sni, got, err)
		}
	}
	issued = &issuedPair
	if len(c.Certificates) != 0 {
		t.Fatal("Certificates is set: crypto/tls would not ask GetCertificate without SNI")
	}
	for _, sni := range []string{"", "n"} {
		if got, err := c.GetCertificate(&tls.ClientHelloInfo{ServerName: sni}); err != nil || got != issued {
			t.Errorf("SNI %q after issue: %v; want the issued certificate", sni, err)
		}
	}
}

// freePorts are n TCP ports on 127.0.0.1 that were free a moment ago.
func freePorts(t *testing.T, n int) []int {
	t.Helper()
	ports, err := freeport.Ports(n)
	if err != nil {
		t.Fatal(err)
	}
	return ports
}

// TestStart runs the three listeners: the healthz port serves /healthz
// only, the read-only port the read-only endpoints without
// authentication, the secure port everything to authenticated callers.
func TestStart(t *testing.T) {
	dir := t.TempDir()
	ca, _ := devcluster.NewCA("test")
	serving, _ := ca.ServingCert("node", nil, []net.IP{net.ParseIP("127.0.0.1")})
	certFile, keyFile, _ := serving.WriteFiles(dir, "serving")
	caFile := filepath.Join(dir, "ca.pem")
	os.WriteFile(caFile, ca.PEM, 0o644)
	client, _ := ca.ClientCert("alice")
	clientPair, _ := client.TLS()

	ports := freePorts(t, 3)
	h := testHandlers(t, fakePods{webPod()}, &fakeRuntime{}, func(c *config.Config) {
		c.Address, c.Port, c.ReadOnlyPort, c.HealthzPort = "127.0.0.1", ports[0], ports[1], ports[2]
		c.TLSCertFile, c.TLSPrivateKeyFile = certFile, keyFile
	})
	guard, err := auth.New(auth.Options{Mode: auth.ModeAlwaysAllow, ClientCAFile: caFile})
	if err != nil {
		t.Fatal(err)
	}
	opts := h.opts
	opts.Auth = guard
	srv, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Shutdown(context.Background()) })

	roots := x509.NewCertPool()
	roots.AppendCertsFromPEM(ca.PEM)
	anonymous := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	alice := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots,
		Certificates: []tls.Certificate{clientPair}}}}
	get := func(c *http.Client, url string) (int, string) {
		t.Helper()
		resp, err := c.Get(url)
		if err != nil {
			t.Fatalf("GET %s: %v", url, err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	secure, readOnly, healthz := fmt.Sprintf("https://127.0.0.1:%d", ports[0]), fmt.Sprintf("http://127.0.0.1:%d", ports[1]),
		fmt.Sprintf("http://127.0.0.1:%d", ports[2])
	for _, tc := range []struct {
		client *http.Client
		url    string
		code   int
	}{
		{http.DefaultClient, healthz + "/healthz", 200},
		{http.DefaultClient, healthz + "/pods", 404},
		{http.DefaultClient, healthz + "/metrics", 404},
		{http.DefaultClient, readOnly + "/pods", 200},
		{http.DefaultClient, readOnly + "/healthz", 200},
		{http.DefaultClient, readOnly + "/configz", 404},
		{anonymous, secure + "/healthz", 401},
		{anonymous, secure + "/pods", 401},
		{alice, secure + "/pods", 200},
		{alice, secure + "/configz", 200},
		{alice, secure + "/metrics", 200},
		{anonymous, secure + "/debug/pprof/heap", 401},
		{alice, secure + "/debug/pprof/heap", 200},
		{http.DefaultClient, readOnly + "/debug/pprof/heap", 405},
		{http.DefaultClient, readOnly + "/debug/pprof/", 405},
		{http.DefaultClient, healthz + "/debug/pprof/", 404},
	} {
		if code, body := get(tc.client, tc.url); code != tc.code {
			t.Errorf("GET %s = %d %q, want %d", tc.url, code, body, tc.code)
		}
	}
	if _, body := get(alice, secure+"/metrics"); !strings.Contains(body, `kubelet_http_requests_total{long_running="false",method="GET",path="pods",server_type="readwrite"}`) ||
		!strings.Contains(body, `server_type="readonly"`) {
		t.Errorf("/metrics lacks the request metrics of both ports:\n%s", body)
	}

	// A taken port fails Start, and the others are let go.
	fresh := freePorts(t, 2)
	cfg := *opts.Config()
	cfg.Port, cfg.ReadOnlyPort = fresh[0], fresh[1] // the healthz port stays taken
	opts.Config = func() *config.Config { return &cfg }
	opts.Metrics = prometheus.NewRegistry()
	again, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := again.Start(); err == nil || !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("Start with the healthz port taken: %v", err)
	}
	for _, port := range fresh {
		l, err := net.Listen("tcp", fmt.Sprintf("127.0.0.1:%d", port))
		if err != nil {
			t.Errorf("port %d is still bound after the failed Start: %v", port, err)
			continue
		}
		l.Close()
	}
}
