//go:build e2e

package devcluster

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
)

// TestCluster starts a cluster, checks that RBAC grants, TokenRequest
// tokens and bootstrap tokens work as tests use them, that the audit log
// records the requests, and that Close leaves nothing.
func TestCluster(t *testing.T) {
	c := StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	token, err := c.ServiceAccountToken(ctx, "default", "reader")
	if err != nil {
		t.Fatal(err)
	}
	review, err := c.Admin.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil || !review.Status.Authenticated || review.Status.User.Username != "system:serviceaccount:default:reader" {
		t.Fatalf("token review: %+v, %v", review.Status, err)
	}

	bootstrap, err := c.BootstrapToken(ctx, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	review, err = c.Admin.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: bootstrap}}, metav1.CreateOptions{})
	if err != nil || !review.Status.Authenticated || !slices.Contains(review.Status.User.Groups, BootstrapGroup) {
		t.Fatalf("bootstrap token review: %+v, %v", review.Status, err)
	}

	allowed := func(user, subresource, verb string) bool {
		t.Helper()
		sar, err := c.Admin.AuthorizationV1().SubjectAccessReviews().Create(ctx, &authorizationv1.SubjectAccessReview{
			Spec: authorizationv1.SubjectAccessReviewSpec{User: user, ResourceAttributes: &authorizationv1.ResourceAttributes{
				Verb: verb, Version: "v1", Resource: "nodes", Subresource: subresource, Name: "n1"}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return sar.Status.Allowed
	}
	if allowed("bob", "stats", "get") {
		t.Error("bob may read stats before any grant")
	}
	if err := c.GrantNodeAccess(ctx, "bob-stats", rbacv1.Subject{Kind: rbacv1.UserKind, Name: "bob"}, []string{"get"}, "stats"); err != nil {
		t.Fatal(err)
	}
	if !allowed("bob", "stats", "get") || allowed("bob", "proxy", "get") || allowed("bob", "stats", "create") {
		t.Error("the grant allows other than get on nodes/stats")
	}

	// A kubeconfig of an identity allowed to review, as a node agent uses it.
	if err := c.AllowReviews(ctx, "agent"); err != nil {
		t.Fatal(err)
	}
	path, err := c.Kubeconfig("agent")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		t.Fatal(err)
	}
	agent, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := agent.AuthenticationV1().TokenReviews().Create(ctx,
		&authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{}); err != nil {
		t.Errorf("the agent's token review: %v", err)
	}
	if _, err := agent.CoreV1().Pods("default").List(ctx, metav1.ListOptions{}); err == nil {
		t.Error("the agent may list pods; it should only review")
	}

	events, err := c.AuditEvents("agent")
	if err != nil {
		t.Fatal(err)
	}
	var reviews int
	for _, e := range events {
		if e.ObjectRef != nil && e.ObjectRef.Resource == "tokenreviews" && e.ResponseStatus.Code == 201 {
			reviews++
		}
	}
	if reviews != 1 {
		t.Errorf("the audit log has %d token reviews of the agent, want 1: %+v", reviews, events)
	}

	dir := c.Dir
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("%s is left after Close: %v", dir, err)
	}
	for _, d := range c.daemons {
		select {
		case <-d.exited:
		default:
			t.Errorf("%s (pid %d) runs after Close", d.name, d.cmd.Process.Pid)
		}
	}
}
