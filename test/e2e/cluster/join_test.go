//go:build e2e

package clustere2e

import (
	"net/http"
	"strings"
	"testing"
)

// TestNodeUsesItsClient joins a node with a client certificate and checks
// that the API server authenticates its client as the node: a request to
// the node API with a service account's token makes the node review the
// token and the access with the API server, which the Node authorizer
// allows system:node:<name>, and the audit log shows those calls.
func TestNodeUsesItsClient(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	n.CallAPIServer(t)
	checkReviewedAsNode(t, n)
}

// checkReviewedAsNode checks that the API server answered the node's
// token and access reviews, made by microlet's client as the node.
func checkReviewedAsNode(t *testing.T, n *clusterNode) {
	t.Helper()
	answered := map[string]int{}
	for _, e := range n.APICalls(t) {
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
