package certificates

import (
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	certificatesv1 "k8s.io/api/certificates/v1"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/certificate"
	"k8s.io/client-go/util/connrotation"
)

// rotationCheckPeriod is how often the client's transport looks for a new
// certificate from the manager (the kubelet's period).
const rotationCheckPeriod = 10 * time.Second

// ClientOptions say whose client certificate rotates.
type ClientOptions struct {
	CertDir  string
	NodeName string
	// BootstrapKubeconfig, when set, asks for the next certificate once
	// the current one has expired (the node was down too long, or
	// renewals failed), as the kubelet does.
	BootstrapKubeconfig string
	Logger              hclog.Logger
	// Metrics gets the kubelet's client certificate metrics; nil: none.
	Metrics prometheus.Registerer
}

// RotateClient makes cfg's client certificate rotate, as the kubelet's
// rotate_certificates: a certificate manager keeps the pair in CertDir
// (kubelet-client-current.pem, seeded from cfg's certificate when the
// store has none), asks for a new one with a CSR of the node's own once
// 70 to 90 % of the current one's life has passed (the controller-manager
// approves a node's CSR for its own name), and cfg's transport presents
// whichever is current, closing its connections when it changes so that
// every request after a rotation carries the new one. Build clients from
// cfg after RotateClient. The returned func stops the rotation.
func RotateClient(cfg *rest.Config, o ClientOptions) (stop func(), err error) {
	if cfg.Transport != nil || cfg.Dial != nil {
		return nil, errors.New("client certificate rotation: the API client already has a transport")
	}
	if err := os.MkdirAll(o.CertDir, 0o700); err != nil {
		return nil, fmt.Errorf("cert_dir: %w", err)
	}
	store, err := certificate.NewFileStore(clientPairName, o.CertDir, o.CertDir, cfg.CertFile, cfg.KeyFile)
	if err != nil {
		return nil, fmt.Errorf("cert_dir: %w", err)
	}
	tlsConfig, err := rest.TLSConfigFor(cfg)
	if err != nil {
		return nil, err
	}
	if tlsConfig == nil {
		tlsConfig = &tls.Config{}
	}
	// The manager asks for renewals through cfg itself, with the
	// certificate it is renewing; without one (expired), with the
	// bootstrap credentials.
	rotating := rest.CopyConfig(cfg)
	clientset := func(current *tls.Certificate) (kubernetes.Interface, error) {
		if current != nil || o.BootstrapKubeconfig == "" {
			return kubernetes.NewForConfig(rotating)
		}
		bootstrap, err := loadKubeconfig(o.BootstrapKubeconfig)
		if err != nil {
			return nil, err
		}
		return kubernetes.NewForConfig(bootstrap)
	}
	metrics := clientMetrics()
	manager, err := certificate.NewManager(metrics.config(&certificate.Config{
		ClientsetFn: clientset,
		Template: &x509.CertificateRequest{Subject: pkix.Name{
			CommonName: "system:node:" + o.NodeName, Organization: []string{"system:nodes"}}},
		SignerName:              certificatesv1.KubeAPIServerClientKubeletSignerName,
		GetUsages:               certificate.DefaultKubeletClientGetUsages,
		CertificateStore:        store,
		BootstrapCertificatePEM: cfg.CertData,
		BootstrapKeyPEM:         cfg.KeyData,
		Name:                    "client",
	}))
	if err != nil {
		return nil, fmt.Errorf("client certificate manager: %w", err)
	}
	if err := metrics.register(o.Metrics, "client", manager); err != nil {
		return nil, err
	}
	dialer := connrotation.NewDialer((&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext)
	tlsConfig.Certificates = nil
	tlsConfig.GetClientCertificate = func(*tls.CertificateRequestInfo) (*tls.Certificate, error) {
		if c := manager.Current(); c != nil {
			return c, nil
		}
		return &tls.Certificate{}, nil
	}
	transport := utilnet.SetTransportDefaults(&http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		TLSHandshakeTimeout: 10 * time.Second,
		TLSClientConfig:     tlsConfig,
		MaxIdleConnsPerHost: 25,
		DialContext:         dialer.DialContext,
	})
	for _, c := range []*rest.Config{cfg, rotating} {
		// The transport carries the TLS settings now; client-go refuses
		// both.
		c.TLSClientConfig = rest.TLSClientConfig{}
		c.Transport = transport
	}

	done := make(chan struct{})
	last := manager.Current()
	go wait.Until(func() {
		if current := manager.Current(); current != nil && current != last {
			last = current
			o.Logger.Info("client certificate rotated; reconnecting to the API server with it",
				"expires", current.Leaf.NotAfter.UTC().Format(time.RFC3339))
			dialer.CloseAll()
		}
	}, rotationCheckPeriod, done)
	manager.Start()
	return func() {
		manager.Stop()
		close(done)
	}, nil
}
