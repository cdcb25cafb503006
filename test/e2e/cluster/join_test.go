//go:build e2e

package clustere2e

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
)

// TestNodeUsesItsClient joins a node with a client certificate and checks
// that the API server authenticates its client as the node: a request to
// the node API with a service account's token makes the node review the
// token and the access with the API server, which the Node authorizer
// allows system:node:<name>, and the audit log shows those calls.
func TestNodeUsesItsClient(t *testing.T) {
	t.Parallel()
	c := cluster(t)
	n := startNode(t, nodeOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	account := n.Name + "-reader"
	token, err := c.ServiceAccountToken(ctx, "default", account)
	if err != nil {
		t.Fatal(err)
	}
	subject := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: "default", Name: account}
	if err := c.GrantNodeAccess(ctx, account, subject, []string{"get"}, "proxy"); err != nil {
		t.Fatal(err)
	}
	if code, body := n.Get(t, "/pods", token); code != http.StatusOK {
		t.Fatalf("GET /pods with the service account's token: %d %s", code, body)
	}

	events, err := c.AuditEvents("system:node:" + n.Name)
	if err != nil {
		t.Fatal(err)
	}
	answered := map[string]int{}
	for _, e := range events {
		if !strings.HasPrefix(e.UserAgent, "microlet/") {
			t.Errorf("the node's client calls itself %q", e.UserAgent)
		}
		if e.ObjectRef != nil && e.ResponseStatus != nil {
			answered[e.ObjectRef.Resource] = e.ResponseStatus.Code
		}
	}
	if answered["tokenreviews"] != http.StatusCreated || answered["subjectaccessreviews"] != http.StatusCreated {
		t.Errorf("the API server answered the node's reviews %v, want 201 for tokenreviews and subjectaccessreviews", answered)
	}
}
