package devcluster

import (
	"context"
	"fmt"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
)

// ClientCert issues a client certificate the API server accepts: user is
// the common name, groups the organizations.
func (c *Cluster) ClientCert(user string, groups ...string) (KeyPair, error) {
	return c.CA.ClientCert(user, groups...)
}

// restConfig reaches the API server with a client certificate.
func (c *Cluster) restConfig(pair KeyPair) *rest.Config {
	return &rest.Config{
		Host:            c.URL,
		TLSClientConfig: rest.TLSClientConfig{CAData: c.CA.PEM, CertData: pair.CertPEM, KeyData: pair.KeyPEM},
	}
}

// Kubeconfig writes a kubeconfig for a client certificate of user into the
// cluster's directory and returns its path.
func (c *Cluster) Kubeconfig(user string, groups ...string) (string, error) {
	pair, err := c.ClientCert(user, groups...)
	if err != nil {
		return "", err
	}
	return c.writeKubeconfig(user, &clientcmdapi.AuthInfo{ClientCertificateData: pair.CertPEM, ClientKeyData: pair.KeyPEM})
}

// NodeKubeconfig writes a kubeconfig for the client certificate a node
// of that name gets from TLS bootstrap (user system:node:<name>, group
// system:nodes), for a node joined without bootstrap.
func (c *Cluster) NodeKubeconfig(nodeName string) (string, error) {
	return c.Kubeconfig("system:node:"+nodeName, "system:nodes")
}

// AllowReviews lets user create TokenReviews and SubjectAccessReviews (the
// system:auth-delegator role), as a node agent that checks its callers
// with the API server needs.
func (c *Cluster) AllowReviews(ctx context.Context, user string) error {
	return c.bind(ctx, "devcluster:"+user+":auth-delegator", "system:auth-delegator", rbacv1.Subject{Kind: rbacv1.UserKind, Name: user})
}

// GrantNodeAccess makes a cluster role allowing verbs on the given
// subresources of nodes ("proxy", "stats", "log", ...) and binds it to
// subject; name names both.
func (c *Cluster) GrantNodeAccess(ctx context.Context, name string, subject rbacv1.Subject, verbs []string, subresources ...string) error {
	resources := make([]string, len(subresources))
	for i, s := range subresources {
		resources[i] = "nodes/" + s
	}
	role := &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name},
		Rules: []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: resources, Verbs: verbs}}}
	if _, err := c.Admin.RbacV1().ClusterRoles().Create(ctx, role, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("cluster role %s: %w", name, err)
	}
	return c.bind(ctx, name, name, subject)
}

func (c *Cluster) bind(ctx context.Context, name, role string, subject rbacv1.Subject) error {
	if subject.Kind == rbacv1.UserKind || subject.Kind == rbacv1.GroupKind {
		subject.APIGroup = rbacv1.GroupName
	}
	binding := &rbacv1.ClusterRoleBinding{ObjectMeta: metav1.ObjectMeta{Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects: []rbacv1.Subject{subject}}
	if _, err := c.Admin.RbacV1().ClusterRoleBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("cluster role binding %s: %w", name, err)
	}
	return nil
}

// ServiceAccountToken makes the service account namespace/name if missing
// and returns a token for it from the TokenRequest API.
func (c *Cluster) ServiceAccountToken(ctx context.Context, namespace, name string) (string, error) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}
	if _, err := c.Admin.CoreV1().ServiceAccounts(namespace).Create(ctx, sa, metav1.CreateOptions{}); err != nil && !apierrors.IsAlreadyExists(err) {
		return "", fmt.Errorf("service account %s/%s: %w", namespace, name, err)
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	resp, err := c.Admin.CoreV1().ServiceAccounts(namespace).CreateToken(ctx, name, req, metav1.CreateOptions{})
	if err != nil {
		return "", fmt.Errorf("token for %s/%s: %w", namespace, name, err)
	}
	return resp.Status.Token, nil
}

// ServiceAccountKubeconfig writes a kubeconfig that authenticates as the
// service account namespace/name with a token from ServiceAccountToken,
// as a component running in a pod of that account would (its in-cluster
// config), and returns its path.
func (c *Cluster) ServiceAccountKubeconfig(ctx context.Context, namespace, name string) (string, error) {
	token, err := c.ServiceAccountToken(ctx, namespace, name)
	if err != nil {
		return "", err
	}
	return c.writeKubeconfig("sa-"+namespace+"-"+name, &clientcmdapi.AuthInfo{Token: token})
}
