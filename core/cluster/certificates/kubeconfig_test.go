package certificates

import (
	"bytes"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"os"
	"path/filepath"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/keyutil"

	"github.com/microlet/microlet/internal/devcluster"
)

// TestKubeconfigInvalid checks which kubeconfigs a node keeps: the one
// bootstrap wrote while its certificate is valid, and not a missing,
// broken or expired one.
func TestKubeconfigInvalid(t *testing.T) {
	dir := t.TempDir()
	ca, err := devcluster.NewCA("cluster")
	if err != nil {
		t.Fatal(err)
	}
	bootstrap := &rest.Config{Host: "https://127.0.0.1:6443", TLSClientConfig: rest.TLSClientConfig{CAData: ca.PEM}}
	write := func(name string, pemData []byte) string {
		t.Helper()
		pemPath := filepath.Join(dir, name+".pem")
		if err := os.WriteFile(pemPath, pemData, 0o600); err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(dir, name+".kubeconfig")
		if err := writeKubeconfig(path, bootstrap, pemPath); err != nil {
			t.Fatal(err)
		}
		return path
	}
	valid, err := ca.ClientCert("system:node:n", "system:nodes")
	if err != nil {
		t.Fatal(err)
	}
	if err := kubeconfigInvalid(write("valid", append(valid.CertPEM, valid.KeyPEM...))); err != nil {
		t.Errorf("a valid kubeconfig: %v", err)
	}
	for name, path := range map[string]string{
		"missing": filepath.Join(dir, "none"),
		"expired": write("expired", bytes.Join(expiredPair(t), nil)),
		"no pair": write("empty", nil),
	} {
		if kubeconfigInvalid(path) == nil {
			t.Errorf("%s: kept", name)
		}
	}
	cfg, err := loadKubeconfig(filepath.Join(dir, "valid.kubeconfig"))
	if err != nil || cfg.Host != bootstrap.Host || string(cfg.CAData) != string(ca.PEM) || cfg.CertFile != filepath.Join(dir, "valid.pem") {
		t.Errorf("the written kubeconfig reads back as %+v, %v", cfg, err)
	}
}

// expiredPair is a self-signed certificate that expired an hour ago and
// its key, PEM.
func expiredPair(t *testing.T) (certAndKey [][]byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "system:node:n"},
		NotBefore: time.Now().Add(-2 * time.Hour), NotAfter: time.Now().Add(-time.Hour)}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, key.Public(), key)
	if err != nil {
		t.Fatal(err)
	}
	keyPEM, err := keyutil.MarshalPrivateKeyToPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	return [][]byte{pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), keyPEM}
}
