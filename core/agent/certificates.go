package agent

import (
	"context"
	"fmt"
	"net"
	"os"

	"k8s.io/client-go/rest"

	"github.com/microlet/microlet/core/cluster/certificates"
)

// bootstrapClient gets the node its client certificate by TLS bootstrap
// when bootstrap_kubeconfig is set and kubeconfig has no valid one yet.
func (a *Agent) bootstrapClient(ctx context.Context) error {
	cfg := a.cfg
	if cfg.BootstrapKubeconfig == "" {
		return nil
	}
	err := certificates.Bootstrap(ctx, certificates.BootstrapOptions{
		Kubeconfig:          cfg.Kubeconfig,
		BootstrapKubeconfig: cfg.BootstrapKubeconfig,
		CertDir:             cfg.CertDir,
		NodeName:            cfg.NodeName,
		Logger:              a.log.Named("certificates"),
	})
	if err != nil {
		return fmt.Errorf("TLS bootstrap: %w", err)
	}
	return nil
}

// clientCredentials is how the API client gets its certificate: rotated
// by a certificate manager with rotate_certificates (its stop added to
// c's), else as the kubeconfig has it.
func (a *Agent) clientCredentials(c *cluster) func(*rest.Config) error {
	cfg := a.cfg
	if !cfg.RotateCertificates {
		return nil
	}
	return func(restConfig *rest.Config) error {
		stop, err := certificates.RotateClient(restConfig, certificates.ClientOptions{
			CertDir: cfg.CertDir, NodeName: cfg.NodeName, BootstrapKubeconfig: cfg.BootstrapKubeconfig,
			Logger: a.log.Named("certificates"), Metrics: a.metrics,
		})
		if err != nil {
			return err
		}
		c.stops = append(c.stops, stop)
		return nil
	}
}

// startServingCertificate asks the API server for the node API's serving
// certificate with server_tls_bootstrap, for the node's hostname and
// addresses.
func (a *Agent) startServingCertificate(c *cluster) error {
	cfg := a.cfg
	if !cfg.ServerTLSBootstrap {
		return nil
	}
	addrs, err := nodeIPs(cfg.NodeIP)
	if err != nil {
		return err
	}
	ips := make([]net.IP, 0, len(addrs))
	for _, addr := range addrs {
		ips = append(ips, net.ParseIP(addr))
	}
	hostname, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("server TLS bootstrap: %w", err)
	}
	m, err := certificates.NewServing(certificates.ServingOptions{
		Client: c.client, CertDir: cfg.CertDir, NodeName: cfg.NodeName,
		Hostname: hostname, IPs: ips, Logger: a.log.Named("certificates"), Metrics: a.metrics,
	})
	if err != nil {
		return err
	}
	c.serving = m
	c.stops = append(c.stops, m.Stop)
	return nil
}
