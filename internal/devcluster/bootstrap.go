package devcluster

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	bootstraputil "k8s.io/cluster-bootstrap/token/util"
)

// BootstrapGroup is the group kubeadm's node bootstrap tokens add
// (auth-extra-groups): kubeadm's RBAC lets it ask for node client
// certificates and approves them.
const BootstrapGroup = "system:bootstrappers:kubeadm:default-node-token"

// setUpNodeBootstrap binds the roles kubeadm binds for nodes joining by
// TLS bootstrap (kubeadm's phases/bootstraptoken/node): bootstrap tokens
// may create CSRs, and the CSR approver approves the node client
// certificates that tokens ask for and those nodes ask for to renew their
// own.
func (c *Cluster) setUpNodeBootstrap(ctx context.Context) error {
	for _, b := range []struct{ name, role, group string }{
		{"kubeadm:kubelet-bootstrap", "system:node-bootstrapper", BootstrapGroup},
		{"kubeadm:node-autoapprove-bootstrap", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", BootstrapGroup},
		{"kubeadm:node-autoapprove-certificate-rotation", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", "system:nodes"},
	} {
		if err := c.bind(ctx, b.name, b.role, rbacv1.Subject{Kind: rbacv1.GroupKind, Name: b.group}); err != nil {
			return err
		}
	}
	return nil
}

// BootstrapToken makes a bootstrap token as `kubeadm token create` does:
// for authentication and signing, in BootstrapGroup, expiring after ttl.
// It returns once the API server accepts the token.
func (c *Cluster) BootstrapToken(ctx context.Context, ttl time.Duration) (string, error) {
	token, err := bootstraputil.GenerateBootstrapToken()
	if err != nil {
		return "", err
	}
	id, secret := token[:bootstrapapi.BootstrapTokenIDBytes], token[bootstrapapi.BootstrapTokenIDBytes+1:]
	s := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: bootstraputil.BootstrapTokenSecretName(id), Namespace: metav1.NamespaceSystem},
		Type:       bootstrapapi.SecretTypeBootstrapToken,
		StringData: map[string]string{
			bootstrapapi.BootstrapTokenIDKey:               id,
			bootstrapapi.BootstrapTokenSecretKey:           secret,
			bootstrapapi.BootstrapTokenExpirationKey:       time.Now().Add(ttl).UTC().Format(time.RFC3339),
			bootstrapapi.BootstrapTokenUsageAuthentication: "true",
			bootstrapapi.BootstrapTokenUsageSigningKey:     "true",
			bootstrapapi.BootstrapTokenExtraGroupsKey:      BootstrapGroup,
		},
	}
	if _, err := c.Admin.CoreV1().Secrets(metav1.NamespaceSystem).Create(ctx, s, metav1.CreateOptions{}); err != nil {
		return "", fmt.Errorf("bootstrap token: %w", err)
	}
	// The API server's bootstrap token authenticator reads secrets from an
	// informer: the token authenticates once the informer has the secret.
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		review, err := c.Admin.AuthenticationV1().TokenReviews().Create(ctx,
			&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
		return err == nil && review.Status.Authenticated, nil
	})
	if err != nil {
		return "", fmt.Errorf("bootstrap token %s does not authenticate: %w", id, err)
	}
	return token, nil
}

// BootstrapKubeconfig makes a bootstrap token valid for ttl and writes a
// kubeconfig with it into the cluster's directory, as a node's
// bootstrap_kubeconfig; it returns the file's path.
func (c *Cluster) BootstrapKubeconfig(ctx context.Context, ttl time.Duration) (string, error) {
	token, err := c.BootstrapToken(ctx, ttl)
	if err != nil {
		return "", err
	}
	return c.writeKubeconfig("bootstrap-"+token[:bootstrapapi.BootstrapTokenIDBytes],
		&clientcmdapi.AuthInfo{Token: token})
}

// writeKubeconfig writes a kubeconfig of the cluster for one identity
// into the cluster's directory and returns its path.
func (c *Cluster) writeKubeconfig(name string, user *clientcmdapi.AuthInfo) (string, error) {
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["devcluster"] = &clientcmdapi.Cluster{Server: c.URL, CertificateAuthorityData: c.CA.PEM}
	cfg.AuthInfos[name] = user
	cfg.Contexts["devcluster"] = &clientcmdapi.Context{Cluster: "devcluster", AuthInfo: name}
	cfg.CurrentContext = "devcluster"
	dir := filepath.Join(c.Dir, "kubeconfigs")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name+".kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}
