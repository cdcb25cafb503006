package transport

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"os"
	"time"
)

// The launcher makes both ends' certificates for each launch, on P-256,
// and hands the plugin its own: go-plugin's AutoMTLS has each end make
// one on P-521, whose first key in a process costs ~10 ms of CPU (Go
// builds the curve's generator table) and keeps the 0.5 MB table for the
// life of the process, in the core and in every plugin (docs/performance.md).
// The trust is AutoMTLS's: only the process that launched the plugin knows
// the certificates, so only it can talk to the plugin, and it talks to
// the process it launched.
const (
	// EnvServerTLS carries the plugin's certificate and key, PEM.
	EnvServerTLS = "MICROLET_PLUGIN_TLS"
	// envClientCert is go-plugin's AutoMTLS variable: the launcher's
	// certificate, PEM, which the plugin requires of its caller. A plugin
	// built with an SDK that predates EnvServerTLS answers it with
	// AutoMTLS of its own, and its certificate in the handshake line
	// replaces the one the launcher made for it.
	envClientCert = "PLUGIN_CLIENT_CERT"
	// certHost is the name both certificates carry and the launcher checks.
	certHost = "localhost"
)

// launchTLS makes one launch's certificates: the launcher's TLS config,
// and the environment that gives the plugin its own.
func launchTLS() (*tls.Config, []string, error) {
	clientPEM, clientKeyPEM, err := newCert()
	if err != nil {
		return nil, nil, err
	}
	serverPEM, serverKeyPEM, err := newCert()
	if err != nil {
		return nil, nil, err
	}
	client, err := tls.X509KeyPair(clientPEM, clientKeyPEM)
	if err != nil {
		return nil, nil, err
	}
	servers := x509.NewCertPool()
	if !servers.AppendCertsFromPEM(serverPEM) {
		return nil, nil, errors.New("plugin TLS: cannot parse the certificate just made")
	}
	env := []string{
		envClientCert + "=" + string(clientPEM),
		EnvServerTLS + "=" + string(serverPEM) + string(serverKeyPEM),
	}
	return mutualTLS(client, servers), env, nil
}

// ServerTLS is the plugin's side (go-plugin's ServeConfig.TLSProvider):
// its certificate from EnvServerTLS, and the launcher's, required of every
// caller, from go-plugin's AutoMTLS variable. Without EnvServerTLS (a
// launcher that uses go-plugin's AutoMTLS) it returns nil, and go-plugin
// does AutoMTLS. The variables leave the environment, so that no process
// the plugin starts inherits its key.
func ServerTLS() (*tls.Config, error) {
	pair, ok := os.LookupEnv(EnvServerTLS)
	if !ok {
		return nil, nil
	}
	clientPEM := os.Getenv(envClientCert)
	os.Unsetenv(EnvServerTLS)
	os.Unsetenv(envClientCert)
	cert, err := tls.X509KeyPair([]byte(pair), []byte(pair))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", EnvServerTLS, err)
	}
	clients := x509.NewCertPool()
	if !clients.AppendCertsFromPEM([]byte(clientPEM)) {
		return nil, fmt.Errorf("%s is set but %s holds no certificate", EnvServerTLS, envClientCert)
	}
	return mutualTLS(cert, clients), nil
}

// mutualTLS is either end's config, as AutoMTLS's: each end is a client
// (calls, or the broker's connections the other way) and a server, and
// trusts the other's certificate alone.
func mutualTLS(own tls.Certificate, peer *x509.CertPool) *tls.Config {
	return &tls.Config{
		Certificates: []tls.Certificate{own},
		ClientAuth:   tls.RequireAndVerifyClientCert,
		ClientCAs:    peer,
		RootCAs:      peer,
		ServerName:   certHost,
		MinVersion:   tls.VersionTLS12,
	}
}

// newCert makes a self-signed certificate for certHost, usable by either
// end, and its key, both PEM: go-plugin's AutoMTLS certificate on P-256.
func newCert() (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 128))
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	template := &x509.Certificate{
		Subject:               pkix.Name{CommonName: certHost, Organization: []string{"microlet"}},
		DNSNames:              []string{certHost},
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth, x509.ExtKeyUsageServerAuth},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
		SerialNumber:          serial,
		NotBefore:             now.Add(-30 * time.Second),
		NotAfter:              now.Add(262980 * time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, template, template, key.Public(), key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	var c, k bytes.Buffer
	if err := pem.Encode(&c, &pem.Block{Type: "CERTIFICATE", Bytes: der}); err != nil {
		return nil, nil, err
	}
	if err := pem.Encode(&k, &pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}); err != nil {
		return nil, nil, err
	}
	return c.Bytes(), k.Bytes(), nil
}
