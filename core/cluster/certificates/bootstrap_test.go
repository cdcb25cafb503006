package certificates

import (
	"bytes"
	"crypto"
	"crypto/x509/pkix"
	"path/filepath"
	"strings"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/client-go/util/certificate"
	"k8s.io/client-go/util/keyutil"
)

// TestBootstrapKey checks that a bootstrap asking again uses the same key:
// the one it left in cert_dir, or that of the pair the store has.
func TestBootstrapKey(t *testing.T) {
	dir := t.TempDir()
	store, err := certificate.NewFileStore(clientPairName, dir, dir, "", "")
	if err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, bootstrapKeyFile)
	first, err := bootstrapKey(store, tmp)
	if err != nil {
		t.Fatal(err)
	}
	again, err := bootstrapKey(store, tmp)
	if err != nil || !bytes.Equal(first, again) {
		t.Errorf("asking again: a new key (%v)", err)
	}
	pair := expiredPair(t)
	if _, err := store.Update(pair[0], pair[1]); err != nil {
		t.Fatal(err)
	}
	stored, err := bootstrapKey(store, tmp)
	if err != nil || !bytes.Equal(stored, pair[1]) {
		t.Errorf("with an expired pair stored: the bootstrap key (%v), want the pair's", err)
	}
}

// TestCSRName checks that a CSR's name is a digest of what it asks for:
// the same request gets the same name, another key another.
func TestCSRName(t *testing.T) {
	subject := &pkix.Name{CommonName: "system:node:n", Organization: []string{"system:nodes"}}
	usages := []certificatesv1.KeyUsage{certificatesv1.UsageDigitalSignature, certificatesv1.UsageClientAuth}
	name := func() string {
		t.Helper()
		data, _, err := keyutil.LoadOrGenerateKeyFile(filepath.Join(t.TempDir(), "k"))
		if err != nil {
			t.Fatal(err)
		}
		key, err := keyutil.ParsePrivateKeyPEM(data)
		if err != nil {
			t.Fatal(err)
		}
		a, err := csrName(key.(crypto.Signer), subject, usages)
		if err != nil {
			t.Fatal(err)
		}
		if b, _ := csrName(key.(crypto.Signer), subject, usages); a != b {
			t.Errorf("one request, two names: %s, %s", a, b)
		}
		return a
	}
	a, b := name(), name()
	if a == b || !strings.HasPrefix(a, "node-csr-") {
		t.Errorf("names %s and %s for two keys", a, b)
	}
}
