//go:build e2e

package kubectlbench

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	"github.com/microlet/microlet/internal/devcluster"
	"github.com/microlet/microlet/internal/devnode"
	"github.com/microlet/microlet/internal/e2e"
	pressuree2e "github.com/microlet/microlet/test/e2e/pressure"
)

// logMaxSize is both agents' container log rotation size: above the
// benchmark's 100 MB log, which kubectl logs reads from the live file only.
const logMaxSize = "200Mi"

// startMicrolet joins a microlet node (every plugin, a devnode of its own)
// to c as the cluster suite's harness does: a node client certificate of
// the cluster's CA, the node API on a loopback port checking client
// certificates of that CA and asking the API server about everyone else.
func startMicrolet(b *testing.B, c *devcluster.Cluster, name string) {
	b.Helper()
	kubeconfig, err := c.NodeKubeconfig(name)
	if err != nil {
		b.Fatal(err)
	}
	port, err := e2e.FreePort()
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir()
	pressuree2e.Start(b, pressuree2e.Options{NodeName: name, Settings: map[string]string{
		"kubeconfig":             quote(kubeconfig),
		"cert_dir":               quote(filepath.Join(dir, "pki")),
		"address":                `"127.0.0.1"`,
		"node_ip":                `"127.0.0.1"`,
		"port":                   fmt.Sprint(port),
		"authentication":         fmt.Sprintf(`{ x509 = { client_ca_file = %s } }`, quote(c.CAFile())),
		"container_log_max_size": quote(logMaxSize),
	}})
}

// startKubelet joins the upstream kubelet, on a devnode of its own, to c
// as kubeadm configures it: client certificates of the cluster's CA,
// webhook authentication and authorization, no anonymous access.
func startKubelet(b *testing.B, c *devcluster.Cluster, name string) {
	b.Helper()
	kubeconfig, err := c.NodeKubeconfig(name)
	if err != nil {
		b.Fatal(err)
	}
	node := devnode.StartT(b)
	// One kubelet runs on a host at a time (it owns host-wide paths):
	// another test's may hold it for a while.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	no, yes := false, true
	k, err := devnode.StartKubelet(ctx, node, devnode.KubeletOptions{
		Configure: func(cfg *kubeletconfig.KubeletConfiguration) {
			cfg.Authentication = kubeletconfig.KubeletAuthentication{
				X509:      kubeletconfig.KubeletX509Authentication{ClientCAFile: c.CAFile()},
				Webhook:   kubeletconfig.KubeletWebhookAuthentication{Enabled: &yes},
				Anonymous: kubeletconfig.KubeletAnonymousAuthentication{Enabled: &no},
			}
			cfg.Authorization = kubeletconfig.KubeletAuthorization{Mode: kubeletconfig.KubeletAuthorizationModeWebhook}
			cfg.ContainerLogMaxSize = logMaxSize
		},
		Args: []string{"--kubeconfig=" + kubeconfig, "--hostname-override=" + name, "--node-ip=127.0.0.1"},
	})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		if err := k.Close(); err != nil {
			b.Errorf("kubelet: %v", err)
		}
	})
}

func quote(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}
