//go:build e2e

package kubectlbench

import (
	"fmt"
	"net"
	"testing"
	"time"

	kubeletconfig "k8s.io/kubelet/config/v1beta1"

	"github.com/microlet/microlet/internal/devcluster"
	"github.com/microlet/microlet/internal/devnode"
	pressuree2e "github.com/microlet/microlet/test/e2e/pressure"
)

// logMaxSize is both agents' container log rotation size: above the
// benchmark's 100 MB log, which kubectl logs reads from the live file only.
const logMaxSize = "200Mi"

// startMicrolet joins a microlet node (every plugin, a devnode of its own)
// to c as the cluster suite's harness does: a node client certificate of
// the cluster's CA, the node API on a port of ip checking client
// certificates of that CA and asking the API server about everyone else.
func startMicrolet(b *testing.B, c *devcluster.Cluster, name, ip string) {
	b.Helper()
	settings := pressuree2e.ClusterSettings(b, c, name, ip)
	settings["container_log_max_size"] = fmt.Sprintf("%q", logMaxSize)
	pressuree2e.Start(b, pressuree2e.Options{NodeName: name, Settings: settings})
}

// startKubelet joins the upstream kubelet, on a devnode of its own, to c
// as kubeadm configures it: client certificates of the cluster's CA,
// webhook authentication and authorization, no anonymous access. Its
// address is ip: the kubelet refuses a loopback node IP.
func startKubelet(b *testing.B, c *devcluster.Cluster, name, ip string) {
	b.Helper()
	kubeconfig, err := c.NodeKubeconfig(name)
	if err != nil {
		b.Fatal(err)
	}
	node := devnode.StartT(b)
	// One kubelet runs on a host at a time (it owns host-wide paths):
	// another test's may hold it for a while.
	no, yes := false, true
	devnode.StartKubeletT(b, node, 20*time.Minute, devnode.KubeletOptions{
		Configure: func(cfg *kubeletconfig.KubeletConfiguration) {
			cfg.Authentication = kubeletconfig.KubeletAuthentication{
				X509:      kubeletconfig.KubeletX509Authentication{ClientCAFile: c.CAFile()},
				Webhook:   kubeletconfig.KubeletWebhookAuthentication{Enabled: &yes},
				Anonymous: kubeletconfig.KubeletAnonymousAuthentication{Enabled: &no},
			}
			cfg.Authorization = kubeletconfig.KubeletAuthorization{Mode: kubeletconfig.KubeletAuthorizationModeWebhook}
			cfg.ContainerLogMaxSize = logMaxSize
			cfg.Address = ip
		},
		Args: []string{"--kubeconfig=" + kubeconfig, "--hostname-override=" + name, "--node-ip=" + ip},
	})
}

// hostIP is the host's address on its default route.
func hostIP(b *testing.B) string {
	b.Helper()
	conn, err := net.Dial("udp", "198.51.100.1:9") // nothing is sent
	if err != nil {
		b.Fatalf("no default route for a node address that is not loopback: %v", err)
	}
	defer conn.Close()
	return conn.LocalAddr().(*net.UDPAddr).IP.String()
}
