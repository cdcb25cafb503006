package devcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// certValidity is how long test certificates last: far longer than any
// test, short enough to be plainly test material.
const certValidity = 24 * time.Hour

// CA is a certificate authority for tests.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer
	// PEM is the CA certificate, PEM-encoded.
	PEM []byte
}

// KeyPair is a certificate and its key, PEM-encoded.
type KeyPair struct {
	CertPEM, KeyPEM []byte
}

// TLS is the pair as crypto/tls uses it.
func (p KeyPair) TLS() (tls.Certificate, error) {
	return tls.X509KeyPair(p.CertPEM, p.KeyPEM)
}

// WriteFiles writes the pair to dir/name.crt and dir/name.key and returns
// their paths.
func (p KeyPair) WriteFiles(dir, name string) (certFile, keyFile string, err error) {
	certFile, keyFile = filepath.Join(dir, name+".crt"), filepath.Join(dir, name+".key")
	if err := os.WriteFile(certFile, p.CertPEM, 0o644); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(keyFile, p.KeyPEM, 0o600); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

// NewCA makes a self-signed CA named commonName.
func NewCA(commonName string) (*CA, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl, err := template(commonName, nil)
	if err != nil {
		return nil, err
	}
	tmpl.IsCA, tmpl.BasicConstraintsValid = true, true
	tmpl.KeyUsage = x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &CA{Cert: cert, Key: key, PEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// ClientCert issues a client certificate: commonName is the user, groups
// its organizations.
func (ca *CA) ClientCert(commonName string, groups ...string) (KeyPair, error) {
	return ca.issue(commonName, groups, []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, nil, nil)
}

// ServingCert issues a server certificate for the given names and
// addresses.
func (ca *CA) ServingCert(commonName string, dnsNames []string, ips []net.IP) (KeyPair, error) {
	return ca.issue(commonName, nil, []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}, dnsNames, ips)
}

func (ca *CA) issue(commonName string, groups []string, usage []x509.ExtKeyUsage, dnsNames []string, ips []net.IP) (KeyPair, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, err
	}
	tmpl, err := template(commonName, groups)
	if err != nil {
		return KeyPair{}, err
	}
	tmpl.KeyUsage = x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment
	tmpl.ExtKeyUsage, tmpl.DNSNames, tmpl.IPAddresses = usage, dnsNames, ips
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, key.Public(), ca.Key)
	if err != nil {
		return KeyPair{}, fmt.Errorf("issue %s: %w", commonName, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return KeyPair{}, err
	}
	return KeyPair{
		CertPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		KeyPEM:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, nil
}

func template(commonName string, groups []string) (*x509.Certificate, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, err
	}
	now := time.Now()
	return &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName, Organization: groups},
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(certValidity),
	}, nil
}
