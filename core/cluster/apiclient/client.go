// Package apiclient builds the clients a cluster node uses to reach the API
// server, from its kubeconfig and the kubelet's client settings.
package apiclient

import (
	"fmt"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Options are the kubelet's client settings (kube_api_qps, kube_api_burst,
// kube_api_content_type).
type Options struct {
	// Kubeconfig is the file that reaches the API server.
	Kubeconfig  string
	QPS         int
	Burst       int
	ContentType string
	// UserAgent names the agent in the API server's logs and metrics.
	UserAgent string
	// Credentials, when set, takes over the config's TLS credentials
	// before the client is built from it (client certificate rotation).
	Credentials func(*rest.Config) error
}

// RESTConfig reads the kubeconfig and applies the client settings.
func RESTConfig(o Options) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", o.Kubeconfig, err)
	}
	cfg.QPS, cfg.Burst = float32(o.QPS), o.Burst
	cfg.ContentType = o.ContentType
	// Protobuf for the built-in types, JSON for anything else the server
	// answers, as the kubelet asks.
	if o.ContentType != "application/json" {
		cfg.AcceptContentTypes = o.ContentType + ",application/json"
	}
	if o.UserAgent != "" {
		cfg.UserAgent = o.UserAgent
	}
	return cfg, nil
}

// New returns a clientset for the kubeconfig and the config it was built from.
func New(o Options) (kubernetes.Interface, *rest.Config, error) {
	cfg, err := RESTConfig(o)
	if err != nil {
		return nil, nil, err
	}
	if o.Credentials != nil {
		if err := o.Credentials(cfg); err != nil {
			return nil, nil, err
		}
	}
	client, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("API client: %w", err)
	}
	return client, cfg, nil
}
