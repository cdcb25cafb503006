package devcluster

import (
	"context"
	"crypto/tls"
	"net/http"
	"strconv"
	"time"

	"github.com/microlet/microlet/internal/freeport"
)

// startControllers runs kube-controller-manager and kube-scheduler as
// kubeadm configures them, each with a client certificate of its
// well-known user, and waits until both are healthy.
func (c *Cluster) startControllers(ctx context.Context, bins binaries, opts Options) error {
	ports, err := freeport.Ports(2)
	if err != nil {
		return err
	}
	kcm, err := c.Kubeconfig("system:kube-controller-manager")
	if err != nil {
		return err
	}
	kcmArgs := append(componentArgs(kcm, ports[0]),
		// kubeadm's: every default controller plus those signing the
		// cluster-info config map and removing expired bootstrap tokens;
		// each controller with a service account of its own.
		"--controllers", "*,bootstrapsigner,tokencleaner",
		"--use-service-account-credentials",
		"--service-account-private-key-file", c.files.saKey,
		"--root-ca-file", c.files.ca,
		"--cluster-signing-cert-file", c.files.ca, "--cluster-signing-key-file", c.files.caKey,
		"--cluster-name", "devcluster")
	if opts.SigningDuration > 0 {
		kcmArgs = append(kcmArgs, "--cluster-signing-duration", opts.SigningDuration.String())
	}
	if opts.NodeMonitorGracePeriod > 0 {
		kcmArgs = append(kcmArgs, "--node-monitor-grace-period", opts.NodeMonitorGracePeriod.String())
	}
	controllerManager, err := c.start("kube-controller-manager", bins.controllerManager, kcmArgs...)
	if err != nil {
		return err
	}
	scheduler, err := c.Kubeconfig("system:kube-scheduler")
	if err != nil {
		return err
	}
	sched, err := c.start("kube-scheduler", bins.scheduler, componentArgs(scheduler, ports[1])...)
	if err != nil {
		return err
	}
	// Both serve /healthz to anyone, on a self-signed certificate they
	// make at start.
	insecure := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	if err := controllerManager.waitFor(ctx, "kube-controller-manager", healthz(ports[0]), insecure); err != nil {
		return err
	}
	return sched.waitFor(ctx, "kube-scheduler", healthz(ports[1]), insecure)
}

// componentArgs are the flags the controller-manager and the scheduler
// share: the kubeconfig for the API and for checking their own callers,
// the secure port on loopback, and no leader election (one replica).
func componentArgs(kubeconfig string, port int) []string {
	return []string{
		"--kubeconfig", kubeconfig,
		"--authentication-kubeconfig", kubeconfig, "--authorization-kubeconfig", kubeconfig,
		"--bind-address", "127.0.0.1", "--secure-port", strconv.Itoa(port),
		"--leader-elect=false",
	}
}

func healthz(port int) string { return "https://127.0.0.1:" + strconv.Itoa(port) + "/healthz" }
