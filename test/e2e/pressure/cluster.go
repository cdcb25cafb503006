//go:build e2e

package pressuree2e

import (
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"

	"github.com/microlet/microlet/internal/devcluster"
	"github.com/microlet/microlet/internal/freeport"
)

// ClusterSettings are the Options.Settings that join a node to c as node
// name (JoinSettings): a node client certificate of the cluster's CA, the
// node API on a free port of ip.
func ClusterSettings(t testing.TB, c *devcluster.Cluster, name, ip string) map[string]string {
	t.Helper()
	kubeconfig, err := c.NodeKubeconfig(name)
	if err != nil {
		t.Fatal(err)
	}
	port, err := freeport.Port()
	if err != nil {
		t.Fatal(err)
	}
	return JoinSettings(c, kubeconfig, filepath.Join(t.TempDir(), "pki"), ip, port)
}

// JoinSettings are the Options.Settings that join a node to c, as the
// cluster suite's harness does: kubeconfig, its serving pair in certDir,
// the node API on ip:port checking client certificates of c's CA and
// asking the API server about everyone else.
func JoinSettings(c *devcluster.Cluster, kubeconfig, certDir, ip string, port int) map[string]string {
	return map[string]string{
		"kubeconfig":     quote(kubeconfig),
		"cert_dir":       quote(certDir),
		"address":        quote(ip),
		"node_ip":        quote(ip),
		"port":           fmt.Sprint(port),
		"authentication": fmt.Sprintf(`{ x509 = { client_ca_file = %s } }`, quote(c.CAFile())),
	}
}

// quote is s as an HCL string.
func quote(s string) string {
	q, _ := json.Marshal(s)
	return string(q)
}
