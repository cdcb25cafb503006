package auth

import (
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"os"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// caRecheckPeriod is how often the client CA file is looked at for a new
// bundle; upstream's dynamic CA content also re-reads it about once a minute.
const caRecheckPeriod = time.Minute

// clientCerts authenticates requests by their TLS client certificate,
// upstream's x509 authenticator with CommonNameUserConversion: a chain to
// one of the CAs, usable for client auth, makes the user its subject's
// common name, with its organizations as groups.
type clientCerts struct {
	cas   *caBundle
	clock clock.PassiveClock
}

func (c clientCerts) Authenticate(r *http.Request) (*User, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return nil, false, nil
	}
	leaf := r.TLS.PeerCertificates[0]
	opts := x509.VerifyOptions{Roots: c.cas.pool(), Intermediates: x509.NewCertPool(), CurrentTime: c.clock.Now(),
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}
	for _, cert := range r.TLS.PeerCertificates[1:] {
		opts.Intermediates.AddCert(cert)
	}
	if _, err := leaf.Verify(opts); err != nil {
		return nil, false, fmt.Errorf("verifying certificate %s failed: %w", describeCert(leaf), err)
	}
	if leaf.Subject.CommonName == "" {
		return nil, false, nil
	}
	fingerprint := sha256.Sum256(leaf.Raw)
	return &User{
		Name:   leaf.Subject.CommonName,
		Groups: leaf.Subject.Organization,
		Extra:  map[string][]string{CredentialIDKey: {"X509SHA256=" + hex.EncodeToString(fingerprint[:])}},
	}, true, nil
}

// describeCert names a certificate in an error as upstream does.
func describeCert(c *x509.Certificate) string {
	return fmt.Sprintf("SN=%d, SKID=%X, AKID=%X, CN=%q, issuer=%q", c.SerialNumber, c.SubjectKeyId, c.AuthorityKeyId,
		c.Subject.CommonName, c.Issuer.String())
}

// caBundle is the client CA file, read again when it changes, so that CAs
// can be rotated without a restart.
type caBundle struct {
	path  string
	clock clock.PassiveClock

	mu        sync.Mutex
	certs     *x509.CertPool
	modTime   time.Time
	size      int64
	checkedAt time.Time
}

// loadCABundle reads the file once; a file that is missing or holds no
// certificate is a configuration error.
func loadCABundle(path string, clk clock.PassiveClock) (*caBundle, error) {
	b := &caBundle{path: path, clock: clk}
	if err := b.reload(); err != nil {
		return nil, err
	}
	return b, nil
}

// pool is the current bundle. A file that changed is read again; if it
// cannot be, the bundle read last stays in use.
func (b *caBundle) pool() *x509.CertPool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.clock.Since(b.checkedAt) >= caRecheckPeriod {
		b.checkedAt = b.clock.Now()
		if info, err := os.Stat(b.path); err == nil && (!info.ModTime().Equal(b.modTime) || info.Size() != b.size) {
			_ = b.reloadLocked() // a half-written file: keep the old bundle, try again later
		}
	}
	return b.certs
}

func (b *caBundle) reload() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.reloadLocked()
}

func (b *caBundle) reloadLocked() error {
	info, err := os.Stat(b.path)
	if err != nil {
		return fmt.Errorf("client CA file: %w", err)
	}
	data, err := os.ReadFile(b.path)
	if err != nil {
		return fmt.Errorf("client CA file: %w", err)
	}
	certs := x509.NewCertPool()
	if !certs.AppendCertsFromPEM(data) {
		return errors.New("client CA file " + b.path + " holds no PEM certificate")
	}
	b.certs, b.modTime, b.size, b.checkedAt = certs, info.ModTime(), info.Size(), b.clock.Now()
	return nil
}
