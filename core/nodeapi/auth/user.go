// Package auth authenticates and authorizes requests to the node API as the
// kubelet does (pkg/kubelet/server/auth.go, cmd/kubelet/app/auth.go): x509
// client certificates, bearer tokens reviewed by the API server
// (TokenReview), anonymous requests when allowed; AlwaysAllow or the API
// server's SubjectAccessReview on nodes/<subresource>, both cached. It
// talks to the API server with client-go's REST client and the
// authentication/v1 and authorization/v1 types only, to keep the core lean.
package auth

// Names the API server gives identities, upstream's (k8s.io/apiserver
// pkg/authentication/user).
const (
	Anonymous          = "system:anonymous"
	AllUnauthenticated = "system:unauthenticated"
	AllAuthenticated   = "system:authenticated"
	// CredentialIDKey is the extra key naming the credential a user
	// authenticated with, such as the client certificate's fingerprint.
	CredentialIDKey = "authentication.kubernetes.io/credential-id"
)

// User is who sent a request.
type User struct {
	Name   string
	UID    string
	Groups []string
	Extra  map[string][]string
}
