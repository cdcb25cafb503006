package certificates

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"fmt"
	"net"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/certificate"
)

// serverPairName is the kubelet's name of the serving pair's store in
// cert_dir (kubelet-server-current.pem).
const serverPairName = "kubelet-server"

// ServingOptions say for whom the node API's certificate is.
type ServingOptions struct {
	Client   kubernetes.Interface
	CertDir  string
	NodeName string
	// Hostname and IPs are the names and addresses clients reach the node
	// API by: the certificate's subject alternative names.
	Hostname string
	IPs      []net.IP
	Logger   hclog.Logger
	// Metrics gets the kubelet's serving certificate metrics; nil: none.
	Metrics prometheus.Registerer
}

// NewServing starts the manager of the node API's serving certificate, as
// the kubelet's server_tls_bootstrap: a kubernetes.io/kubelet-serving CSR
// for system:node:<name> with the node's hostname and addresses, renewed
// like the client certificate. No controller approves serving CSRs (the
// API server cannot check the names in them): an operator or an approver
// of their own does. Until one is issued Current is nil, and the node API
// serves its self-signed pair; a pair issued before is reused at start.
func NewServing(o ServingOptions) (certificate.Manager, error) {
	store, err := certificate.NewFileStore(serverPairName, o.CertDir, o.CertDir, "", "")
	if err != nil {
		return nil, fmt.Errorf("cert_dir: %w", err)
	}
	var names []string
	if o.Hostname != "" {
		names = []string{o.Hostname}
	}
	metrics := servingMetrics()
	m, err := certificate.NewManager(metrics.config(&certificate.Config{
		ClientsetFn: func(*tls.Certificate) (kubernetes.Interface, error) { return o.Client, nil },
		Template: &x509.CertificateRequest{
			Subject:  pkix.Name{CommonName: "system:node:" + o.NodeName, Organization: []string{"system:nodes"}},
			DNSNames: names, IPAddresses: o.IPs,
		},
		SignerName:       certificatesv1.KubeletServingSignerName,
		GetUsages:        certificate.DefaultKubeletServingGetUsages,
		CertificateStore: store,
		Name:             "serving",
	}))
	if err != nil {
		return nil, fmt.Errorf("serving certificate manager: %w", err)
	}
	if err := metrics.register(o.Metrics, "server", m); err != nil {
		return nil, err
	}
	m.Start()
	if m.Current() == nil {
		o.Logger.Info("server TLS bootstrap: the node API serves its self-signed pair until a kubelet-serving certificate signing request is approved")
	}
	return m, nil
}
