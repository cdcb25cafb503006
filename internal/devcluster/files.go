package devcluster

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"net"
	"os"
	"path/filepath"
)

// pkiFiles are the certificates, keys and policies the daemons read.
type pkiFiles struct {
	ca, caKey                           string
	servingCert, servingKey             string
	kubeletClientCert, kubeletClientKey string
	saKey, saPublic                     string
	auditPolicy                         string
	// The aggregation layer's (kubeadm's front-proxy-ca and
	// front-proxy-client): the API server proxies to extension API servers
	// such as metrics-server with this client certificate, and they trust
	// the user it names in request headers because this CA signed it.
	frontProxyCA, proxyClientCert, proxyClientKey string
}

// frontProxyClient is the common name of the aggregator's client
// certificate, the one name extension API servers accept request headers
// from (--requestheader-allowed-names), as kubeadm sets it.
const frontProxyClient = "front-proxy-client"

// auditPolicy records who called what (no bodies), leaving out the
// control plane's own chatter so that the log holds the nodes' and the
// tests' requests.
const auditPolicy = `apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
rules:
- level: None
  users: [system:apiserver, system:kube-controller-manager, system:kube-scheduler]
- level: None
  userGroups: [system:serviceaccounts:kube-system]
- level: Metadata
`

// writePKI writes the CA (with its key: the controller-manager signs
// the nodes' certificates with it), the API server's serving pair and its
// client pair for the nodes' APIs, the service-account signing key and the
// audit policy.
func (c *Cluster) writePKI() (pkiFiles, error) {
	pki := filepath.Join(c.Dir, "pki")
	if err := os.MkdirAll(pki, 0o700); err != nil {
		return pkiFiles{}, err
	}
	f := pkiFiles{
		ca: filepath.Join(pki, "ca.crt"), caKey: filepath.Join(pki, "ca.key"),
		saKey: filepath.Join(pki, "sa.key"), saPublic: filepath.Join(pki, "sa.pub"),
		auditPolicy: filepath.Join(pki, "audit-policy.yaml"),
	}
	caKey, err := x509.MarshalPKCS8PrivateKey(c.CA.Key)
	if err != nil {
		return f, err
	}
	if err := os.WriteFile(f.ca, c.CA.PEM, 0o644); err != nil {
		return f, err
	}
	if err := os.WriteFile(f.caKey, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: caKey}), 0o600); err != nil {
		return f, err
	}
	if err := os.WriteFile(f.auditPolicy, []byte(auditPolicy), 0o644); err != nil {
		return f, err
	}
	serving, err := c.CA.ServingCert("kube-apiserver", []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		[]net.IP{net.ParseIP("127.0.0.1"), net.ParseIP("10.0.0.1")})
	if err != nil {
		return f, err
	}
	if f.servingCert, f.servingKey, err = serving.WriteFiles(pki, "apiserver"); err != nil {
		return f, err
	}
	kubeletClient, err := c.CA.ClientCert("kube-apiserver-kubelet-client", "system:masters")
	if err != nil {
		return f, err
	}
	if f.kubeletClientCert, f.kubeletClientKey, err = kubeletClient.WriteFiles(pki, "apiserver-kubelet-client"); err != nil {
		return f, err
	}
	if err := writeFrontProxy(pki, &f); err != nil {
		return f, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return f, err
	}
	private, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return f, err
	}
	public, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil {
		return f, err
	}
	if err := os.WriteFile(f.saKey, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: private}), 0o600); err != nil {
		return f, err
	}
	return f, os.WriteFile(f.saPublic, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: public}), 0o644)
}

// writeFrontProxy writes the aggregation layer's CA and the API server's
// client pair of it into pki.
func writeFrontProxy(pki string, f *pkiFiles) error {
	ca, err := NewCA("front-proxy-ca")
	if err != nil {
		return err
	}
	f.frontProxyCA = filepath.Join(pki, "front-proxy-ca.crt")
	if err := os.WriteFile(f.frontProxyCA, ca.PEM, 0o644); err != nil {
		return err
	}
	client, err := ca.ClientCert(frontProxyClient)
	if err != nil {
		return err
	}
	f.proxyClientCert, f.proxyClientKey, err = client.WriteFiles(pki, frontProxyClient)
	return err
}

// CAFile is the PEM file of the cluster's CA certificate (c.CA.PEM), for a
// node's client_ca_file.
func (c *Cluster) CAFile() string { return c.files.ca }

func (c *Cluster) auditLogPath() string { return filepath.Join(c.Dir, "audit.log") }
