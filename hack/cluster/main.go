// Command cluster brings up a Kubernetes cluster on this machine: a
// control plane on loopback (internal/devcluster: etcd, kube-apiserver,
// kube-controller-manager and kube-scheduler, set up as kubeadm does) and
// one microlet node on a private containerd (internal/devrun) that joins
// it by TLS bootstrap with a bootstrap token. It prints how to reach the
// cluster with kubectl; Ctrl-C stops everything and removes what it made.
// `make cluster` builds the binaries and runs it (as root).
//
//	go run ./hack/cluster [-bin _output/bin] [-manifests examples/manifests]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"

	"github.com/microlet/microlet/internal/devnode"
	"github.com/microlet/microlet/internal/devrun"
)

// bootstrapTimeout bounds the wait for the node's TLS bootstrap.
const bootstrapTimeout = 2 * time.Minute

func main() {
	bin := flag.String("bin", "_output/bin", "directory of the microlet and plugin binaries (make build)")
	manifests := flag.String("manifests", "examples/manifests", "static pod manifests the node runs")
	healthzPort := flag.Int("healthz-port", 10248, "port of /healthz on 127.0.0.1")
	readOnlyPort := flag.Int("read-only-port", 10255, "port of the node API's read-only endpoints on 127.0.0.1")
	port := flag.Int("port", 10250, "port of the node API on 127.0.0.1")
	flag.Parse()
	log := hclog.New(&hclog.LoggerOptions{Name: "cluster", Level: hclog.Info})
	opts := devrun.Options{Manifests: *manifests, CgroupRoot: "/microlet-cluster",
		HealthzPort: *healthzPort, ReadOnlyPort: *readOnlyPort, Port: *port, Logger: log}
	opts.Bin, _ = filepath.Abs(*bin)
	opts.Manifests, _ = filepath.Abs(*manifests)
	if err := run(opts); err != nil {
		log.Error("failed", "error", err)
		os.Exit(1)
	}
}

func run(opts devrun.Options) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	kubeBin, err := devnode.KubeToolsDir()
	if err != nil {
		return err
	}
	cl, err := devrun.StartCluster(ctx, kubeBin, opts)
	if err != nil {
		return err
	}
	defer cl.Stop()
	node := cl.Node
	if err := waitForFile(ctx, node, cl.NodeKubeconfig); err != nil {
		return err
	}

	kubectl := fmt.Sprintf("KUBECONFIG=%s %s", cl.Admin, filepath.Join(kubeBin, "kubectl"))
	fmt.Printf(`
A cluster is up: its API server at %s (etcd, kube-apiserver, kube-controller-manager,
kube-scheduler on loopback), and node %q, microlet (pid %d) on a private containerd,
joined by TLS bootstrap (its client certificate is in %s).

  kubectl:   %s get nodes,csr,pods -A
  node log:  tail -f %s
  config:    %s
  control plane logs: %s/*.log

Ctrl-C stops everything.
`, cl.Control.URL, cl.NodeName, node.PID, filepath.Join(node.Dir, "root", "pki"), kubectl, node.LogPath, node.ConfigPath, cl.Control.Dir)
	return node.Wait(ctx)
}

// waitForFile waits until the node's TLS bootstrap wrote path.
// A Ctrl-C meanwhile ends the wait without an error.
func waitForFile(ctx context.Context, node *devrun.Node, path string) error {
	deadline := time.Now().Add(bootstrapTimeout)
	for ctx.Err() == nil {
		if _, err := os.Stat(path); err == nil {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the node did not finish its TLS bootstrap within %s; its log: %s", bootstrapTimeout, node.LogPath)
		}
		poll, stop := context.WithTimeout(ctx, 200*time.Millisecond)
		err := node.Wait(poll)
		stop()
		if err != nil {
			return err
		}
	}
	return nil
}
