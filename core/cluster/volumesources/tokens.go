package volumesources

import (
	"context"
	"fmt"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// maxTokenAge is when a token is renewed whatever its lifetime, as
// upstream's token manager (pkg/kubelet/token).
const maxTokenAge = 24 * time.Hour

// tokenKey is what makes a token request distinct: the same service
// account, audience, lifetime and pod get the same token.
type tokenKey struct {
	namespace, serviceAccount, audience string
	expirationSeconds                   int64 // 0: the API server's default
	podName                             string
	podUID                              types.UID
}

type cachedToken struct {
	token       string
	issued, exp time.Time
}

// needsRenewal is upstream's requiresRefresh: past 80% of the token's life
// or older than 24 h.
func (t cachedToken) needsRenewal(now time.Time) bool {
	life := t.exp.Sub(t.issued)
	return !now.Before(t.exp.Add(-life/5)) || !now.Before(t.issued.Add(maxTokenAge))
}

// tokenCache keeps the tokens of the node's pods until they must be
// renewed.
type tokenCache struct {
	now    func() time.Time
	mu     sync.Mutex
	tokens map[tokenKey]cachedToken
}

func newTokenCache(now func() time.Time) *tokenCache {
	return &tokenCache{now: now, tokens: map[tokenKey]cachedToken{}}
}

func (c *tokenCache) get(ctx context.Context, client kubernetes.Interface, pod *v1.Pod, audience string, expirationSeconds *int64) (string, error) {
	key := tokenKey{namespace: pod.Namespace, serviceAccount: pod.Spec.ServiceAccountName, audience: audience,
		podName: pod.Name, podUID: pod.UID}
	if expirationSeconds != nil {
		key.expirationSeconds = *expirationSeconds
	}
	now := c.now()
	c.mu.Lock()
	for k, t := range c.tokens {
		if !now.Before(t.exp) { // expired: its pod is likely gone
			delete(c.tokens, k)
		}
	}
	cached, ok := c.tokens[key]
	c.mu.Unlock()
	if ok && !cached.needsRenewal(now) {
		return cached.token, nil
	}
	req := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
		ExpirationSeconds: expirationSeconds,
		BoundObjectRef:    &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID},
	}}
	if audience != "" {
		req.Spec.Audiences = []string{audience}
	}
	resp, err := client.CoreV1().ServiceAccounts(pod.Namespace).CreateToken(ctx, pod.Spec.ServiceAccountName, req, metav1.CreateOptions{})
	if err != nil {
		if ok && now.Before(cached.exp) {
			// As upstream: a token still valid beats none while the API
			// server cannot issue a new one.
			return cached.token, nil
		}
		return "", err
	}
	if resp.Status.Token == "" || resp.Spec.ExpirationSeconds == nil {
		return "", fmt.Errorf("the API server returned no token for service account %s/%s", pod.Namespace, pod.Spec.ServiceAccountName)
	}
	exp := resp.Status.ExpirationTimestamp.Time
	t := cachedToken{token: resp.Status.Token, exp: exp, issued: exp.Add(-time.Duration(*resp.Spec.ExpirationSeconds) * time.Second)}
	c.mu.Lock()
	c.tokens[key] = t
	c.mu.Unlock()
	return t.token, nil
}
