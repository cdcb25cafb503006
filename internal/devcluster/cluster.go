// Package devcluster runs a real control plane for tests: Debian's etcd
// and an upstream kube-apiserver (built by hack/kube-tools/build.sh into
// .cache/kube/bin), on loopback ports of their own, with a private data
// directory, a CA and certificates made for the run, a service-account
// signing key, and authorization as kubeadm sets it up: the Node
// authorizer and RBAC, the NodeRestriction admission plugin, bootstrap
// tokens and kubeadm's RBAC for nodes joining by TLS bootstrap. Tests reach
// it with client-go: they grant access with RBAC objects, ask for
// service-account tokens (TokenRequest) and give microlet a kubeconfig, so
// that its node API's token reviews and access reviews go to a real API
// server. With Options.Controllers it runs kube-controller-manager and
// kube-scheduler too: a cluster nodes join, whose certificates get signed
// and whose pods get scheduled.
//
// Start brings the cluster up; Close stops every process by its PID and
// removes every file. StartT does both for a test and skips it, with a
// message saying how to fix that, when a binary is missing.
package devcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/microlet/microlet/internal/devnode"
	"github.com/microlet/microlet/internal/freeport"
	"github.com/microlet/microlet/internal/lastresort"
	"github.com/microlet/microlet/internal/prereq"
)

// startTimeout bounds the wait for etcd and the API server to serve: a
// cold kube-apiserver takes several seconds on a loaded 2-core machine.
const startTimeout = 2 * time.Minute

// ErrPrerequisites means the cluster cannot run here: a binary is missing.
var ErrPrerequisites = errors.New("devcluster prerequisites")

// Options say where the binaries are and which parts run.
type Options struct {
	// KubeBin holds kube-apiserver, kube-controller-manager and
	// kube-scheduler; default: $KUBE_TOOLS_BIN, else
	// <module root>/.cache/kube/bin.
	KubeBin string
	// Etcd is the etcd binary; default: etcd on $PATH, installed from
	// Debian's etcd-server if missing.
	Etcd string
	// Controllers runs kube-controller-manager and kube-scheduler too.
	Controllers bool
	// SigningDuration is how long the certificates the controller-manager
	// signs last (--cluster-signing-duration); 0 keeps upstream's default,
	// capped by the CA's validity.
	SigningDuration time.Duration
	// NodeMonitorGracePeriod is how long a node may go silent before the
	// node lifecycle controller marks it NotReady
	// (--node-monitor-grace-period); 0 keeps upstream's default.
	NodeMonitorGracePeriod time.Duration
}

// Cluster is a running etcd and kube-apiserver, and with
// Options.Controllers kube-controller-manager and kube-scheduler.
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
	files       pkiFiles
	// api is the kube-apiserver daemon, which StopAPIServer and
	// StartAPIServer replace.
	api *daemon
	// The daemons in the order they start; Close stops them in reverse.
	daemons []*daemon
	// unregister takes Close off the lastresort watchdog's list.
	unregister func()
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

// Start brings up etcd and the API server (and the controllers if asked),
// sets up node bootstrap, and waits until everything serves. On error it
// leaves nothing behind.
func Start(ctx context.Context, opts Options) (_ *Cluster, err error) {
	bins, err := findBinaries(ctx, opts)
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
	ports, err := freeport.Ports(3)
	if err != nil {
		return nil, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(ports[0])
	peerURL := "http://127.0.0.1:" + strconv.Itoa(ports[1])
	c.URL = "https://127.0.0.1:" + strconv.Itoa(ports[2])

	ctx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	etcd, err := c.start("etcd", bins.etcd,
		"--name", "devcluster", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", peerURL, "--initial-advertise-peer-urls", peerURL,
		"--initial-cluster", "devcluster="+peerURL, "--log-level", "warn")
	if err != nil {
		return nil, err
	}
	if err := etcd.waitFor(ctx, "etcd", etcdURL+"/health", http.DefaultClient); err != nil {
		return nil, err
	}

	if c.files, err = c.writePKI(); err != nil {
		return nil, err
	}
	api, err := c.start("kube-apiserver", bins.apiserver,
		"--etcd-servers", etcdURL,
		"--bind-address", "127.0.0.1", "--advertise-address", "127.0.0.1", "--secure-port", strconv.Itoa(ports[2]),
		"--tls-cert-file", c.files.servingCert, "--tls-private-key-file", c.files.servingKey,
		"--client-ca-file", c.files.ca,
		// kubeadm's: nodes are authorized by the Node authorizer and may
		// change only their own Node and pods; bootstrap tokens log in.
		"--authorization-mode", "Node,RBAC",
		"--enable-admission-plugins", "NodeRestriction",
		"--enable-bootstrap-token-auth",
		"--allow-privileged",
		// For logs, exec and port-forward through the API server.
		// kubeadm dials nodes by address first, so that a node whose
		// hostname does not resolve is still reachable.
		"--kubelet-client-certificate", c.files.kubeletClientCert, "--kubelet-client-key", c.files.kubeletClientKey,
		"--kubelet-preferred-address-types", "InternalIP,ExternalIP,Hostname",
		"--audit-policy-file", c.files.auditPolicy, "--audit-log-path", c.auditLogPath(),
		"--service-account-issuer", "https://kubernetes.default.svc.cluster.local",
		"--service-account-key-file", c.files.saPublic, "--service-account-signing-key-file", c.files.saKey,
		// The aggregation layer, as kubeadm configures it, for extension
		// API servers (metrics-server's metrics.k8s.io).
		"--requestheader-client-ca-file", c.files.frontProxyCA,
		"--requestheader-allowed-names", frontProxyClient,
		"--requestheader-username-headers", "X-Remote-User",
		"--requestheader-group-headers", "X-Remote-Group",
		"--requestheader-extra-headers-prefix", "X-Remote-Extra-",
		"--proxy-client-cert-file", c.files.proxyClientCert, "--proxy-client-key-file", c.files.proxyClientKey,
		"--service-cluster-ip-range", "10.0.0.0/24",
		"--endpoint-reconciler-type", "none", "--profiling=false")
	if err != nil {
		return nil, err
	}
	c.api = api
	admin, err := c.ClientCert("devcluster-admin", "system:masters")
	if err != nil {
		return nil, err
	}
	c.adminConfig = c.restConfig(admin)
	adminHTTP, err := rest.HTTPClientFor(c.adminConfig)
	if err != nil {
		return nil, err
	}
	if err := api.waitFor(ctx, "kube-apiserver", c.URL+"/readyz", adminHTTP); err != nil {
		return nil, err
	}
	if c.Admin, err = kubernetes.NewForConfig(c.adminConfig); err != nil {
		return nil, err
	}
	if err := c.setUpNodeBootstrap(ctx); err != nil {
		return nil, err
	}
	if opts.Controllers {
		if err := c.startControllers(ctx, bins, opts); err != nil {
			return nil, err
		}
	}
	c.unregister = lastresort.Register("devcluster in "+c.Dir, c.Close)
	return c, nil
}

// start starts a daemon of the cluster, its log in the cluster's
// directory.
func (c *Cluster) start(name, bin string, args ...string) (*daemon, error) {
	d, err := startDaemon(filepath.Join(c.Dir, name+".log"), bin, args...)
	if err != nil {
		return nil, err
	}
	c.daemons = append(c.daemons, d)
	return d, nil
}

// binaries are the programs a cluster runs.
type binaries struct {
	etcd, apiserver, controllerManager, scheduler string
}

// findBinaries finds the programs opts asks for.
func findBinaries(ctx context.Context, opts Options) (binaries, error) {
	var b binaries
	bin := opts.KubeBin
	if bin == "" {
		var err error
		if bin, err = devnode.KubeToolsDir(); err != nil {
			return b, fmt.Errorf("%w: %v; set %s", ErrPrerequisites, err, devnode.EnvKubeTools)
		}
	}
	kube := []*string{&b.apiserver}
	b.apiserver = filepath.Join(bin, "kube-apiserver")
	if opts.Controllers {
		b.controllerManager = filepath.Join(bin, "kube-controller-manager")
		b.scheduler = filepath.Join(bin, "kube-scheduler")
		kube = append(kube, &b.controllerManager, &b.scheduler)
	}
	for _, path := range kube {
		if _, err := os.Stat(*path); err != nil {
			return b, fmt.Errorf("%w: no %s in %s; build it with `make kube-tools` (or set KUBE_TOOLS_BIN)",
				ErrPrerequisites, filepath.Base(*path), bin)
		}
	}
	b.etcd = opts.Etcd
	if b.etcd == "" {
		if err := devnode.EnsureProgram(ctx, hclog.NewNullLogger(), "etcd", "etcd-server"); err != nil {
			return b, fmt.Errorf("%w: %v", ErrPrerequisites, err)
		}
		var err error
		if b.etcd, err = exec.LookPath("etcd"); err != nil {
			return b, fmt.Errorf("%w: no etcd on PATH; install Debian's etcd-server", ErrPrerequisites)
		}
	}
	return b, nil
}

// LogTails writes the end of each daemon's log to w: what a failed test
// shows of the control plane, whose directory Close removes.
func (c *Cluster) LogTails(w io.Writer) {
	for _, d := range c.daemons {
		fmt.Fprintf(w, "--- the end of %s:\n%s\n", d.logPath, d.logTail())
	}
}

// Close stops the daemons by their PIDs, last started first, and removes
// the cluster's directory. Calls may overlap (the lastresort watchdog's
// and a test's): each does every step.
func (c *Cluster) Close() error {
	if c.unregister != nil {
		defer c.unregister()
	}
	var errs []error
	for _, d := range slices.Backward(c.daemons) {
		errs = append(errs, d.stop())
	}
	if c.Dir != "" {
		errs = append(errs, os.RemoveAll(c.Dir))
	}
	return errors.Join(errs...)
}
