package agent

import (
	"fmt"
	"runtime"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

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
}

// newCluster connects to the API server when kubeconfig is set.
func (a *Agent) newCluster() (*cluster, error) {
	cfg := a.cfg
	if cfg.Kubeconfig == "" {
		return nil, nil
	}
	client, restConfig, err := apiclient.New(apiclient.Options{
		Kubeconfig:  cfg.Kubeconfig,
		QPS:         cfg.KubeAPIQPS,
		Burst:       cfg.KubeAPIBurst,
		ContentType: cfg.KubeAPIContentType,
		UserAgent:   fmt.Sprintf("microlet/%s (%s/%s)", Version, runtime.GOOS, runtime.GOARCH),
	})
	if err != nil {
		return nil, err
	}
	return &cluster{client: client, rest: restConfig}, nil
}
