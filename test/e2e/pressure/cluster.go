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
// name, as the cluster suite's harness does: a node client certificate of
// the cluster's CA, the node API on a free port of ip checking client
// certificates of that CA and asking the API server about everyone else.
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
	return map[string]string{
		"kubeconfig":     quote(kubeconfig),
		"cert_dir":       quote(filepath.Join(t.TempDir(), "pki")),
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
