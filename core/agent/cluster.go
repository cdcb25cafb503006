package agent

import (
	"context"
	"fmt"
	"runtime"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/certificate"

	"github.com/microlet/microlet/core/cluster/apiclient"
)

// Version is the agent's version, set by cmd/microlet from its build.
var Version = "dev"

// cluster is what a node of a cluster has beyond a standalone one: the API
// server's client and the parts that use it. It is nil on a standalone
// node (no kubeconfig), as the kubelet's standalone mode.
type cluster struct {
	client kubernetes.Interface
	rest   *rest.Config
	// serving is the node API's certificate from the API server
	// (server_tls_bootstrap); nil without it.
	serving certificate.Manager
	// outages logs the API server's outages once for all the parts.
	outages *apiclient.Outages
	// stops end the certificate managers.
	stops []func()
}

// newCluster connects to the API server when kubeconfig is set, after TLS
// bootstrap if the node has no client certificate yet.
func (a *Agent) newCluster(ctx context.Context) (*cluster, error) {
	cfg := a.cfg
	if cfg.Kubeconfig == "" {
		return nil, nil
	}
	if err := a.bootstrapClient(ctx); err != nil {
		return nil, err
	}
	c := &cluster{outages: apiclient.NewOutages(a.log.Named("apiserver"))}
	var err error
	c.client, c.rest, err = apiclient.New(apiclient.Options{
		Kubeconfig:  cfg.Kubeconfig,
		QPS:         cfg.KubeAPIQPS,
		Burst:       cfg.KubeAPIBurst,
		ContentType: cfg.KubeAPIContentType,
		UserAgent:   fmt.Sprintf("microlet/%s (%s/%s)", Version, runtime.GOOS, runtime.GOARCH),
		Credentials: a.clientCredentials(c),
	})
	if err != nil {
		c.stop()
		return nil, err
	}
	if err := a.startServingCertificate(c); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// stop ends what the cluster runs in the background; nil-safe.
func (c *cluster) stop() {
	if c == nil {
		return
	}
	for _, stop := range c.stops {
		stop()
	}
}
