//go:build e2e

package clustere2e

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/microlet/microlet/internal/devcluster"
)

// rotationSigningDuration is how long the rotation test's control plane
// signs certificates for. The signer backdates certificates by 5 minutes
// and the certificate manager renews at 70 to 90 % of the whole life, so
// a client certificate renews 15 to 105 s after it was issued.
const rotationSigningDuration = 150 * time.Second

// TestTLSBootstrap joins a node with a bootstrap token only: the node asks
// for its client certificate with a CSR, which the controller-manager
// approves and signs; the pair lands in cert_dir with a kubeconfig
// pointing at it, and the node's client is system:node:<name>. A restart
// reuses the certificate instead of asking again.
func TestTLSBootstrap(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{Bootstrap: true})

	cert := clientCertificate(t, n)
	checkNodeClientCertificate(t, n, cert)
	kubeconfig, err := clientcmd.LoadFromFile(n.Kubeconfig)
	if err != nil {
		t.Fatalf("the bootstrapped kubeconfig: %v", err)
	}
	auth := kubeconfig.AuthInfos[kubeconfig.Contexts[kubeconfig.CurrentContext].AuthInfo]
	if current := filepath.Join(n.CertDir, "kubelet-client-current.pem"); auth.ClientCertificate != current || auth.ClientKey != current {
		t.Errorf("the kubeconfig's client certificate and key are %s and %s, want %s", auth.ClientCertificate, auth.ClientKey, current)
	}
	requests := nodeClientCSRs(t, n)
	if len(requests) != 1 {
		t.Fatalf("%d client CSRs of the node, want 1: %v", len(requests), requests)
	}
	if csr := requests[0]; !strings.HasPrefix(csr.Spec.Username, "system:bootstrap:") || !approved(csr) {
		t.Errorf("the bootstrap CSR %s: by %s, conditions %v; want one by a bootstrap token, approved", csr.Name, csr.Spec.Username, csr.Status.Conditions)
	}
	n.CallAPIServer(t)
	checkReviewedAsNode(t, n)

	n.RestartCore()
	if again := clientCertificate(t, n); again.SerialNumber.Cmp(cert.SerialNumber) != 0 {
		t.Errorf("after a restart the node has certificate %s, want the one it had, %s", again.SerialNumber, cert.SerialNumber)
	}
	if requests := nodeClientCSRs(t, n); len(requests) != 1 {
		t.Errorf("after a restart the node has %d client CSRs, want the 1 of its bootstrap", len(requests))
	}
	n.CallAPIServer(t)
}

// TestClientCertificateRotation runs a control plane of its own whose
// certificates last minutes, joins a node by TLS bootstrap with
// rotate_certificates, and waits until the node has renewed its client
// certificate with a CSR of its own (approved by the controller-manager as
// a node renewing itself) and calls the API server with the new one.
func TestClientCertificateRotation(t *testing.T) {
	t.Parallel()
	cluster(t) // the same prerequisites
	c := devcluster.StartT(t, devcluster.Options{Controllers: true, SigningDuration: rotationSigningDuration})
	n := startNode(t, nodeOptions{Cluster: c, Bootstrap: true, Settings: map[string]string{"rotate_certificates": "true"}})

	first := clientCertificate(t, n)
	var renewed *x509.Certificate
	n.Eventually("the client certificate is renewed", func() (bool, string) {
		renewed = clientCertificate(t, n)
		return renewed.SerialNumber.Cmp(first.SerialNumber) != 0,
			fmt.Sprintf("certificate %s valid %s to %s", renewed.SerialNumber, renewed.NotBefore, renewed.NotAfter)
	})
	checkNodeClientCertificate(t, n, renewed)
	var byNode []string
	for _, csr := range nodeClientCSRs(t, n) {
		if csr.Spec.Username == "system:node:"+n.Name {
			if !approved(csr) {
				t.Errorf("the node's renewal CSR %s is not approved: %v", csr.Name, csr.Status.Conditions)
			}
			byNode = append(byNode, csr.Name)
		}
	}
	if len(byNode) == 0 {
		t.Error("no client CSR made by the node itself")
	}
	n.Eventually("the node's client reconnects with the new certificate", func() (bool, string) {
		return strings.Contains(n.Log(), "client certificate rotated"), "no rotation in the node's log"
	})
	n.CallAPIServer(t)
	checkReviewedAsNode(t, n)
	checkTTLMetric(t, n, "kubelet_certificate_manager_client_ttl_seconds", rotationSigningDuration)
}

// checkTTLMetric checks that the node's /metrics has the kubelet's TTL
// gauge of a certificate, within what the signer gives.
func checkTTLMetric(t *testing.T, n *clusterNode, name string, max time.Duration) {
	t.Helper()
	if ttl, ok := n.Metric(name, nil); !ok || ttl <= 0 || ttl > max.Seconds() {
		t.Errorf("%s = %v (found %v), want within (0, %v]", name, ttl, ok, max.Seconds())
	}
}

// TestKubeconfigCertificateRotated joins a node with a kubeconfig holding
// its certificate and rotate_certificates, as kubeadm joins the first
// control-plane node: the certificate manager takes the kubeconfig's pair
// as a start only and asks for one of its own at once, which the
// controller-manager approves as a node renewing itself.
func TestKubeconfigCertificateRotated(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{Settings: map[string]string{"rotate_certificates": "true"}})
	var issued *x509.Certificate
	n.Eventually("the node renews the kubeconfig's certificate", func() (bool, string) {
		requests := nodeCSRs(t, n.Cluster, certificatesv1.KubeAPIServerClientKubeletSignerName, "system:node:"+n.Name)
		if len(requests) == 0 || !approved(requests[0]) || len(requests[0].Status.Certificate) == 0 {
			return false, fmt.Sprintf("%d client CSRs by the node", len(requests))
		}
		block, _ := pem.Decode(requests[0].Status.Certificate)
		if block == nil {
			return false, "no PEM certificate in the CSR"
		}
		var err error
		issued, err = x509.ParseCertificate(block.Bytes)
		return err == nil, fmt.Sprint(err)
	})
	n.Eventually("the issued certificate is the node's current one", func() (bool, string) {
		cert := clientCertificate(t, n)
		return cert.SerialNumber.Cmp(issued.SerialNumber) == 0, fmt.Sprintf("certificate %s, issued %s", cert.SerialNumber, issued.SerialNumber)
	})
	checkNodeClientCertificate(t, n, issued)
	n.CallAPIServer(t)
	checkReviewedAsNode(t, n)
}

// TestServingCertificate starts a node with server_tls_bootstrap: its node
// API serves the self-signed pair until the kubelet-serving CSR it makes
// (for its hostname and address) is approved, here with kubectl as an
// operator would, then the certificate the cluster's CA signed; a restart
// serves that one at once.
func TestServingCertificate(t *testing.T) {
	t.Parallel()
	c := cluster(t)
	n := startNode(t, nodeOptions{Settings: map[string]string{"server_tls_bootstrap": "true"}})
	if issuedByCA(c, n.ServingChain(t)[0]) {
		t.Fatal("the node API serves a certificate of the cluster's CA before any CSR was approved")
	}

	var request *certificatesv1.CertificateSigningRequest
	n.Eventually("the node asks for a serving certificate", func() (bool, string) {
		requests := nodeCSRs(t, c, certificatesv1.KubeletServingSignerName, "system:node:"+n.Name)
		if len(requests) == 0 {
			return false, "no kubelet-serving CSR of the node"
		}
		request = &requests[0]
		return true, ""
	})
	block, _ := pem.Decode(request.Spec.Request)
	if block == nil {
		t.Fatalf("CSR %s holds no PEM request", request.Name)
	}
	asked, err := x509.ParseCertificateRequest(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	hostname, _ := os.Hostname()
	if asked.Subject.CommonName != "system:node:"+n.Name || !slices.Contains(asked.DNSNames, hostname) ||
		!slices.ContainsFunc(asked.IPAddresses, func(ip net.IP) bool { return ip.Equal(net.IPv4(127, 0, 0, 1)) }) {
		t.Errorf("the serving CSR asks for %s, names %v, addresses %v; want system:node:%s, %s, 127.0.0.1",
			asked.Subject.CommonName, asked.DNSNames, asked.IPAddresses, n.Name, hostname)
	}

	kubectl(t, "certificate", "approve", request.Name)
	n.Eventually("the node API serves the issued certificate", func() (bool, string) {
		return servesIssued(c, n), fmt.Sprintf("serving %s", n.ServingChain(t)[0].Subject)
	})
	checkTTLMetric(t, n, "kubelet_certificate_manager_server_ttl_seconds", 24*time.Hour)

	n.RestartCore()
	if !servesIssued(c, n) {
		t.Errorf("after a restart the node API serves %s, not the certificate issued before", n.ServingChain(t)[0].Subject)
	}
}

// servesIssued says whether a client trusting only the cluster's CA
// accepts the node API at 127.0.0.1.
func servesIssued(c *devcluster.Cluster, n *clusterNode) bool {
	roots := x509.NewCertPool()
	roots.AddCert(c.CA.Cert)
	conn, err := tls.Dial("tcp", strings.TrimPrefix(n.Secure, "https://"), &tls.Config{RootCAs: roots})
	if err != nil {
		return false
	}
	conn.Close()
	return true
}

func issuedByCA(c *devcluster.Cluster, cert *x509.Certificate) bool {
	return cert.CheckSignatureFrom(c.CA.Cert) == nil
}

// clientCertificate is the client certificate in the node's cert_dir.
func clientCertificate(t testing.TB, n *clusterNode) *x509.Certificate {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(filepath.Join(n.CertDir, "kubelet-client-current.pem"), filepath.Join(n.CertDir, "kubelet-client-current.pem"))
	if err != nil {
		t.Fatalf("the node's client certificate: %v", err)
	}
	return pair.Leaf
}

// checkNodeClientCertificate checks that cert is the node's identity,
// signed by the cluster's CA.
func checkNodeClientCertificate(t testing.TB, n *clusterNode, cert *x509.Certificate) {
	t.Helper()
	if cert.Subject.CommonName != "system:node:"+n.Name || !slices.Equal(cert.Subject.Organization, []string{"system:nodes"}) {
		t.Errorf("the client certificate is for %s %v, want system:node:%s [system:nodes]", cert.Subject.CommonName, cert.Subject.Organization, n.Name)
	}
	if !issuedByCA(n.Cluster, cert) {
		t.Errorf("the client certificate was not signed by the cluster's CA (issuer %s)", cert.Issuer)
	}
}

// nodeClientCSRs are the node's client CSRs, whoever made them.
func nodeClientCSRs(t testing.TB, n *clusterNode) []certificatesv1.CertificateSigningRequest {
	t.Helper()
	var mine []certificatesv1.CertificateSigningRequest
	for _, csr := range nodeCSRs(t, n.Cluster, certificatesv1.KubeAPIServerClientKubeletSignerName, "") {
		block, _ := pem.Decode(csr.Spec.Request)
		if block == nil {
			continue
		}
		if req, err := x509.ParseCertificateRequest(block.Bytes); err == nil && req.Subject.CommonName == "system:node:"+n.Name {
			mine = append(mine, csr)
		}
	}
	return mine
}

// nodeCSRs are the CSRs for signer, of user when set, oldest first.
func nodeCSRs(t testing.TB, c *devcluster.Cluster, signer, user string) []certificatesv1.CertificateSigningRequest {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	list, err := c.Admin.CertificatesV1().CertificateSigningRequests().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []certificatesv1.CertificateSigningRequest
	for _, csr := range list.Items {
		if csr.Spec.SignerName == signer && (user == "" || csr.Spec.Username == user) {
			out = append(out, csr)
		}
	}
	slices.SortFunc(out, func(a, b certificatesv1.CertificateSigningRequest) int {
		return a.CreationTimestamp.Compare(b.CreationTimestamp.Time)
	})
	return out
}

func approved(csr certificatesv1.CertificateSigningRequest) bool {
	return slices.ContainsFunc(csr.Status.Conditions, func(c certificatesv1.CertificateSigningRequestCondition) bool {
		return c.Type == certificatesv1.CertificateApproved && c.Status == corev1.ConditionTrue
	})
}
