package nodeapi

import (
	"crypto/tls"
	"fmt"
	"os"
	"path/filepath"

	"github.com/hashicorp/go-hclog"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/client-go/util/keyutil"
	cliflag "k8s.io/component-base/cli/flag"

	"github.com/microlet/microlet/core/config"
	"github.com/microlet/microlet/core/nodeapi/auth"
)

// The self-signed pair's file names in cert_dir, the kubelet's.
const (
	selfSignedCert = "kubelet.crt"
	selfSignedKey  = "kubelet.key"
)

// serverTLS is the secure port's TLS, as the kubelet's InitializeTLS: the
// configured pair, or else a self-signed one kept in cert_dir (made on
// first start, for the node's name); the minimum version and cipher
// suites; and, with a client CA, client certificates requested (not
// required: bearer tokens and anonymous requests come without one) and the
// CAs named in the handshake. issued, when set, is the certificate the API
// server issued; the pair serves while it has none.
func serverTLS(cfg *config.Config, a *auth.Auth, issued func() *tls.Certificate, log hclog.Logger) (*tls.Config, error) {
	certFile, keyFile := cfg.TLSCertFile, cfg.TLSPrivateKeyFile
	if certFile == "" {
		var err error
		if certFile, keyFile, err = selfSignedPair(cfg.CertDir, cfg.NodeName, log); err != nil {
			return nil, err
		}
	}
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, fmt.Errorf("node API serving certificate %s: %w", certFile, err)
	}
	out := &tls.Config{Certificates: []tls.Certificate{pair}, NextProtos: []string{"http/1.1"}}
	if issued != nil {
		// crypto/tls asks GetCertificate only without SNI when
		// Certificates is empty: clients dialing an IP send none.
		out.Certificates = nil
		out.GetCertificate = func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			if c := issued(); c != nil {
				return c, nil
			}
			return &pair, nil
		}
	}
	if cfg.TLSMinVersion != "" {
		if out.MinVersion, err = cliflag.TLSVersion(cfg.TLSMinVersion); err != nil {
			return nil, err
		}
	}
	if len(cfg.TLSCipherSuites) > 0 {
		if out.CipherSuites, err = cliflag.TLSCipherSuites(cfg.TLSCipherSuites); err != nil {
			return nil, err
		}
	}
	if a.ClientCAs() != nil {
		out.ClientAuth = tls.RequestClientCert
		// The bundle may be replaced while the node runs: each handshake
		// names the CAs in force.
		out.GetConfigForClient = func(*tls.ClientHelloInfo) (*tls.Config, error) {
			c := out.Clone()
			c.GetConfigForClient = nil
			c.ClientCAs = a.ClientCAs()
			return c, nil
		}
	}
	return out, nil
}

// selfSignedPair is cert_dir's pair, made if missing or unreadable.
func selfSignedPair(dir, nodeName string, log hclog.Logger) (certFile, keyFile string, err error) {
	certFile, keyFile = filepath.Join(dir, selfSignedCert), filepath.Join(dir, selfSignedKey)
	if ok, _ := certutil.CanReadCertAndKey(certFile, keyFile); ok {
		return certFile, keyFile, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", "", fmt.Errorf("cert_dir: %w", err)
	}
	cert, key, err := certutil.GenerateSelfSignedCertKey(nodeName, nil, nil)
	if err != nil {
		return "", "", fmt.Errorf("self-signed serving certificate: %w", err)
	}
	if err := certutil.WriteCert(certFile, cert); err != nil {
		return "", "", fmt.Errorf("self-signed serving certificate: %w", err)
	}
	if err := keyutil.WriteKey(keyFile, key); err != nil {
		return "", "", fmt.Errorf("self-signed serving key: %w", err)
	}
	log.Info("made a self-signed serving certificate for the node API", "cert", certFile, "key", keyFile)
	return certFile, keyFile, nil
}
