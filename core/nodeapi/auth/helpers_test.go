package auth

import (
	"crypto/tls"
	"crypto/x509"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/microlet/microlet/internal/devcluster"
)

// newCA makes a CA and writes its bundle to a file.
func newCA(t *testing.T, name string) (*devcluster.CA, string) {
	t.Helper()
	ca, err := devcluster.NewCA(name)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), name+".pem")
	if err := os.WriteFile(file, ca.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	return ca, file
}

// withCert is a request whose TLS connection presented pair's chain.
func withCert(t *testing.T, pair devcluster.KeyPair) *http.Request {
	t.Helper()
	cert, err := pair.TLS()
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/pods", nil)
	r.TLS = &tls.ConnectionState{}
	for _, der := range cert.Certificate {
		c, err := x509.ParseCertificate(der)
		if err != nil {
			t.Fatal(err)
		}
		r.TLS.PeerCertificates = append(r.TLS.PeerCertificates, c)
	}
	return r
}

func withToken(token string) *http.Request {
	r := httptest.NewRequest("GET", "/pods", nil)
	r.Header.Set("Authorization", "Bearer "+token)
	return r
}
