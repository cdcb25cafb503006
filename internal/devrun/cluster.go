package devrun

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/microlet/microlet/internal/devcluster"
)

// Cluster is a control plane on loopback (internal/devcluster, with its
// controllers) and a node that joined it by TLS bootstrap, as
// hack/cluster and hack/conformance run them.
type Cluster struct {
	// Control is the control plane.
	Control *devcluster.Cluster
	// Node is the microlet node.
	Node *Node
	// Admin is a kubeconfig of a cluster admin (system:masters).
	Admin string
	// NodeKubeconfig is the node's kubeconfig, written once its TLS
	// bootstrap is done.
	NodeKubeconfig string
	// NodeName is the node's name: the host name, lowercased, as microlet
	// defaults node_name.
	NodeName string
}

// StartCluster starts a control plane from the binaries in kubeBin and a
// node (opts, with the cluster's keys added to opts.Extra) that joins it
// with a bootstrap token, and returns once the node runs. On error it
// leaves nothing behind; Stop ends both.
func StartCluster(ctx context.Context, kubeBin string, opts Options) (_ *Cluster, err error) {
	opts.Logger.Info("starting the control plane")
	c, err := devcluster.Start(ctx, devcluster.Options{KubeBin: kubeBin, Controllers: true})
	if err != nil {
		return nil, fmt.Errorf("control plane (make kube-tools builds its binaries): %w", err)
	}
	cl := &Cluster{Control: c, NodeKubeconfig: filepath.Join(c.Dir, "node.kubeconfig")}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close())
		}
	}()
	if cl.Admin, err = c.Kubeconfig("admin", "system:masters"); err != nil {
		return nil, err
	}
	bootstrap, err := c.BootstrapKubeconfig(ctx, 24*time.Hour)
	if err != nil {
		return nil, err
	}
	opts.Extra = fmt.Sprintf(`
# Joins the cluster by TLS bootstrap; callers of the node API authenticate
# with a client certificate of the cluster's CA or a token the API server
# knows.
kubeconfig = %q
bootstrap_kubeconfig = %q
rotate_certificates = true
node_ip = "127.0.0.1"
authentication {
  x509 {
    client_ca_file = %q
  }
}
`, cl.NodeKubeconfig, bootstrap, c.CAFile()) + opts.Extra
	if cl.Node, err = Start(ctx, opts); err != nil {
		return nil, err
	}
	name, _ := os.Hostname()
	cl.NodeName = strings.ToLower(name)
	return cl, nil
}

// Stop is Close of the node, then of the control plane, for a command's
// defer: it says so, and logs what failed.
func (cl *Cluster) Stop() {
	cl.Node.Stop()
	if err := cl.Control.Close(); err != nil {
		cl.Node.opts.Logger.Error("stopping the control plane", "error", err)
	}
}
