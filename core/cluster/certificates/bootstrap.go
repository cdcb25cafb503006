// Package certificates gives a cluster node its certificates from the API
// server, as the kubelet does: TLS bootstrap (a client certificate asked
// for with a bootstrap token's credentials, kept in cert_dir with a
// kubeconfig pointing at it), rotation of the client certificate before it
// expires, and the node API's serving certificate from a kubelet-serving
// CSR. The CSRs, the files in cert_dir and the kubeconfig written are the
// kubelet's, so that the control plane's approvers and an operator's tools
// treat the node as a kubelet.
package certificates

import (
	"context"
	"crypto"
	"crypto/rsa"
	"crypto/sha512"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-hclog"
	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/kubernetes"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/certificate"
	"k8s.io/client-go/util/certificate/csr"
	"k8s.io/client-go/util/keyutil"
)

// The kubelet's names in cert_dir: the client pair's store
// (kubelet-client-current.pem and dated pairs) and the key a bootstrap
// keeps until its certificate is issued, so that a restart mid-way asks
// again with the same key (and finds the same CSR).
const (
	clientPairName   = "kubelet-client"
	bootstrapKeyFile = "kubelet-client.key.tmp"
)

// retryInterval is how long a bootstrap waits before asking again when the
// API server does not answer.
const retryInterval = 5 * time.Second

// BootstrapOptions say where a node's client credentials live.
type BootstrapOptions struct {
	// Kubeconfig is written by the bootstrap; a valid one is kept.
	Kubeconfig string
	// BootstrapKubeconfig has the credentials that may ask for a node
	// client certificate (a bootstrap token).
	BootstrapKubeconfig string
	// CertDir keeps the client pair.
	CertDir  string
	NodeName string
	Logger   hclog.Logger
}

// Bootstrap makes sure Kubeconfig holds a client certificate that has not
// expired. When it is missing, unreadable or expired, Bootstrap asks for a
// certificate of user system:node:<name> in group system:nodes with a CSR
// made with BootstrapKubeconfig's credentials, waits until the control
// plane issues it (the controller-manager approves those of bootstrap
// tokens and signs them), stores it in CertDir and writes Kubeconfig
// pointing at it. A valid Kubeconfig is left as is, so a restart reuses
// the certificate it has. It gives up only when ctx ends.
func Bootstrap(ctx context.Context, o BootstrapOptions) error {
	log := o.Logger
	why := kubeconfigInvalid(o.Kubeconfig)
	if why == nil {
		log.Debug("the kubeconfig's client certificate is valid; no TLS bootstrap", "kubeconfig", o.Kubeconfig)
		return nil
	}
	log.Info("TLS bootstrap: asking the API server for a client certificate", "reason", why, "bootstrap_kubeconfig", o.BootstrapKubeconfig)
	bootstrap, err := loadKubeconfig(o.BootstrapKubeconfig)
	if err != nil {
		return fmt.Errorf("bootstrap_kubeconfig: %w", err)
	}
	client, err := kubernetes.NewForConfig(bootstrap)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(o.CertDir, 0o700); err != nil {
		return fmt.Errorf("cert_dir: %w", err)
	}
	store, err := certificate.NewFileStore(clientPairName, o.CertDir, o.CertDir, "", "")
	if err != nil {
		return fmt.Errorf("cert_dir: %w", err)
	}
	keyPEM, err := bootstrapKey(store, filepath.Join(o.CertDir, bootstrapKeyFile))
	if err != nil {
		return err
	}
	certPEM, err := requestClientCertificate(ctx, client, keyPEM, o.NodeName, log)
	if err != nil {
		return err
	}
	if _, err := store.Update(certPEM, keyPEM); err != nil {
		return fmt.Errorf("storing the client certificate: %w", err)
	}
	if err := os.Remove(filepath.Join(o.CertDir, bootstrapKeyFile)); err != nil && !errors.Is(err, os.ErrNotExist) {
		log.Warn("removing the bootstrap key", "error", err)
	}
	log.Info("TLS bootstrap: client certificate issued", "certificate", store.CurrentPath(), "kubeconfig", o.Kubeconfig)
	return writeKubeconfig(o.Kubeconfig, bootstrap, store.CurrentPath())
}

// bootstrapKey is the key of the pair in the store if there is one (an
// expired certificate is renewed for the same key), else the key a
// previous bootstrap left, else a new one.
func bootstrapKey(store certificate.FileStore, tmpKey string) ([]byte, error) {
	if pair, err := store.Current(); err == nil && pair.PrivateKey != nil {
		if data, err := keyutil.MarshalPrivateKeyToPEM(pair.PrivateKey); err == nil {
			return data, nil
		}
	}
	data, _, err := keyutil.LoadOrGenerateKeyFile(tmpKey)
	if err != nil {
		return nil, fmt.Errorf("bootstrap key: %w", err)
	}
	return data, nil
}

// requestClientCertificate creates the node's client CSR (again until the
// API server answers) and waits until it is issued.
func requestClientCertificate(ctx context.Context, client kubernetes.Interface, keyPEM []byte, nodeName string, log hclog.Logger) ([]byte, error) {
	key, err := keyutil.ParsePrivateKeyPEM(keyPEM)
	if err != nil {
		return nil, fmt.Errorf("bootstrap key: %w", err)
	}
	signer, ok := key.(crypto.Signer)
	if !ok {
		return nil, errors.New("bootstrap key: not a signing key")
	}
	subject := &pkix.Name{CommonName: "system:node:" + nodeName, Organization: []string{"system:nodes"}}
	csrPEM, err := certutil.MakeCSR(key, subject, nil, nil)
	if err != nil {
		return nil, fmt.Errorf("certificate request: %w", err)
	}
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	if _, ok := key.(*rsa.PrivateKey); ok {
		usages = append(usages, certificatesv1.UsageKeyEncipherment)
	}
	name, err := csrName(signer, subject, usages)
	if err != nil {
		return nil, err
	}
	for {
		reqName, uid, err := csr.RequestCertificateWithContext(ctx, client, csrPEM, name,
			certificatesv1.KubeAPIServerClientKubeletSignerName, nil, usages, key)
		if err == nil {
			log.Info("TLS bootstrap: waiting for the certificate signing request to be approved and signed", "csr", reqName)
			return csr.WaitForCertificate(ctx, client, reqName, uid)
		}
		log.Warn("TLS bootstrap: creating the certificate signing request", "error", err)
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("TLS bootstrap: %w (last error: %v)", ctx.Err(), err)
		case <-time.After(retryInterval):
		}
	}
}

// csrName names a CSR after what it asks for, as the kubelet does
// ("node-csr-" and a digest of the key, subject and usages): a bootstrap
// asking again for the same finds its earlier request instead of making
// another.
func csrName(signer crypto.Signer, subject *pkix.Name, usages []certificatesv1.KeyUsage) (string, error) {
	public, err := x509.MarshalPKIXPublicKey(signer.Public())
	if err != nil {
		return "", err
	}
	h := sha512.New512_256()
	for _, part := range append([]string{string(public), subject.CommonName}, subject.Organization...) {
		h.Write([]byte(part))
		h.Write([]byte{'|'})
	}
	for _, u := range usages {
		h.Write([]byte(u))
		h.Write([]byte{'|'})
	}
	return "node-csr-" + base64.RawURLEncoding.EncodeToString(h.Sum(nil)), nil
}
