// Package devcluster runs a real control plane for tests: Debian's etcd
// and an upstream kube-apiserver (built by hack/kube-tools/build.sh into
// .cache/kube/bin), on loopback ports of their own, with a private data
// directory, a CA and certificates made for the run, a service-account
// signing key, and authorization by RBAC. Tests reach it with client-go:
// they grant access with RBAC objects, ask for service-account tokens
// (TokenRequest) and give microlet a kubeconfig, so that its node API's
// token reviews and access reviews go to a real API server.
//
// Start brings the cluster up; Close stops both processes by their PIDs
// and removes every file. StartT does both for a test and skips it, with a
// message saying how to fix that, when kube-apiserver or etcd is missing.
package devcluster

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/microlet/microlet/internal/devnode"
	"github.com/microlet/microlet/internal/prereq"
)

// startTimeout bounds the wait for etcd and the API server to serve: a
// cold kube-apiserver takes several seconds on a loaded 2-core machine.
const startTimeout = 2 * time.Minute

// ErrPrerequisites means the cluster cannot run here: a binary is missing.
var ErrPrerequisites = errors.New("devcluster prerequisites")

// Options say where the binaries are.
type Options struct {
	// KubeBin holds kube-apiserver; default: $KUBE_TOOLS_BIN, else
	// <module root>/.cache/kube/bin.
	KubeBin string
	// Etcd is the etcd binary; default: etcd on $PATH, installed from
	// Debian's etcd-server if missing.
	Etcd string
}

// Cluster is a running etcd and kube-apiserver.
type Cluster struct {
	// Dir holds everything of the cluster; Close removes it.
	Dir string
	// URL is the API server's https URL on 127.0.0.1.
	URL string
	// CA signed the API server's serving certificate and every client
	// certificate the cluster accepts; microlet trusts it for client
	// certificates too, as kubelets trust the cluster CA.
	CA *CA
	// Admin is a client of the system:masters group.
	Admin *kubernetes.Clientset

	adminConfig *rest.Config
	etcd, api   *daemon
}

// StartT starts a cluster for t and closes it in t.Cleanup. When a binary
// is missing it skips t, or fails it under CI (internal/prereq).
func StartT(t testing.TB, opts ...Options) *Cluster {
	t.Helper()
	var o Options
	if len(opts) > 0 {
		o = opts[0]
	}
	c, err := Start(context.Background(), o)
	if errors.Is(err, ErrPrerequisites) {
		prereq.Missing(t, "devcluster: %v", err)
	}
	if err != nil {
		t.Fatalf("devcluster: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Errorf("devcluster: close: %v", err)
		}
	})
	return c
}

// Start brings up etcd and the API server and waits until the API server
// is ready. On error it leaves nothing behind.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	apiserver, etcdBin, err := binaries(ctx, opts)
	if err != nil {
		return nil, err
	}
	dir, err := os.MkdirTemp("", "devcluster-")
	if err != nil {
		return nil, err
	}
	c := &Cluster{Dir: dir}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close())
		}
	}()
	if c.CA, err = NewCA("devcluster-ca"); err != nil {
		return nil, err
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	c.URL = "https://127.0.0.1:" + strconv.Itoa(ports[2])

	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	c.etcd, err = startDaemon(filepath.Join(dir, "etcd.log"), etcdBin,
		"--name", "devcluster", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "devcluster="+peerURL, "--log-level", "warn")
	if err != nil {
		return nil, err
	}
	if err := c.etcd.waitFor(ctx, "etcd", etcdURL+"/health", http.DefaultClient); err != nil {
		return nil, err
	}

	files, err := c.writeAPIServerFiles()
	if err != nil {
		return nil, err
	}
	c.api, err = startDaemon(filepath.Join(dir, "kube-apiserver.log"), apiserver,
		"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", strconv.Itoa(ports[2]),
		"--tls-cert-file", files.servingCert, "--tls-private-key-file", files.servingKey,
		"--client-ca-file", files.ca,
		"--authorization-mode", "RBAC",
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", files.saPublic, "--service-account-signing-key-file", files.saKey,
		"--service-cluster-ip-range", "10.0.0.0/24",
		"--endpoint-reconciler-type", "none", "--profiling=false")
	if err != nil {
		return nil, err
	}
	admin, err := c.ClientCert("devcluster-admin", "system:masters")
	if err != nil {
		return nil, err
	}
	c.adminConfig = c.restConfig(admin)
	adminHTTP, err := rest.HTTPClientFor(c.adminConfig)
	if err != nil {
		return nil, err
	}
	if err := c.api.waitFor(ctx, "kube-apiserver", c.URL+"/readyz", adminHTTP); err != nil {
		return nil, err
	}
	if c.Admin, err = kubernetes.NewForConfig(c.adminConfig); err != nil {
		return nil, err
	}
	return c, nil
}

// binaries finds kube-apiserver and etcd, installing Debian's etcd-server
// when etcd is missing.
func binaries(ctx context.Context, opts Options) (apiserver, etcd string, err error) {
	bin := opts.KubeBin
	if bin == "" {
		if bin, err = devnode.KubeToolsDir(); err != nil {
			return "", "", fmt.Errorf("%w: %v; set %s", ErrPrerequisites, err, devnode.EnvKubeTools)
		}
	}
	apiserver = filepath.Join(bin, "kube-apiserver")
	if _, err := os.Stat(apiserver); err != nil {
		return "", "", fmt.Errorf("%w: no kube-apiserver in %s; build it with `bash hack/kube-tools/build.sh` (or set KUBE_TOOLS_BIN)",
			ErrPrerequisites, bin)
	}
	etcd = opts.Etcd
	if etcd == "" {
		if err := devnode.EnsureProgram(ctx, hclog.NewNullLogger(), "etcd", "etcd-server"); err != nil {
			return "", "", fmt.Errorf("%w: %v", ErrPrerequisites, err)
		}
		if etcd, err = exec.LookPath("etcd"); err != nil {
			return "", "", fmt.Errorf("%w: no etcd on PATH; install Debian's etcd-server", ErrPrerequisites)
		}
	}
	return apiserver, etcd, nil
}

// apiServerFiles are the API server's certificates and keys.
type apiServerFiles struct {
	ca, servingCert, servingKey, saKey, saPublic string
}

func (c *Cluster) writeAPIServerFiles() (apiServerFiles, error) {
	pki := filepath.Join(c.Dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return apiServerFiles{}, err
	}
	f := apiServerFiles{ca: filepath.Join(pki, "ca.crt"), saKey: filepath.Join(pki, "sa.key"), saPublic: filepath.Join(pki, "sa.pub")}
	if err := os.WriteFile(f.ca, c.CA.PEM, 0o644); err != nil {
		return f, err
	}
	serving, err := c.CA.ServingCert("kube-apiserver", []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		[]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")})
	if err != nil {
		return f, err
	}
	if f.servingCert, f.servingKey, err = serving.WriteFiles(pki, "apiserver"); err != nil {
		return f, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return f, err
	}
	private, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return f, err
	}
	public, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return f, err
	}
	if err := os.WriteFile(f.saKey, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: private}), 0o600); err != nil {
		return f, err
	}
	return f, os.WriteFile(f.saPublic, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: public}), 0o644)
}

// Close stops the API server, then etcd, by their PIDs, and removes the
// cluster's directory.
func (c *Cluster) Close() error {
	var errs []error
	for _, d := range []*daemon{c.api, c.etcd} {
		if d != nil {
			errs = append(errs, d.stop())
		}
	}
	if c.Dir != "" {
		errs = append(errs, os.RemoveAll(c.Dir))
	}
	return errors.Join(errs...)
}

func freePorts(n int) ([]int, error) {
	var ports []int
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		defer l.Close()
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}
