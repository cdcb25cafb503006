package auth

import (
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"strings"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/rest"
)

// tokenCacheSize bounds the token review cache. Upstream's is unbounded;
// here a flood of distinct bad tokens cannot grow the core's memory.
const tokenCacheSize = 4096

// errInvalidToken is upstream's answer for a token the API server did not
// accept without saying why.
var errInvalidToken = errors.New("invalid bearer token")

// tokenReviewer reviews a token; the API server in production.
type tokenReviewer func(ctx context.Context, token string) (*authenticationv1.TokenReviewStatus, error)

// bearerTokens authenticates "Authorization: Bearer <token>" by a
// TokenReview, caching each answer, good or bad, for ttl (upstream caches
// both for cacheTTL). Failures to ask are not cached.
type bearerTokens struct {
	review tokenReviewer
	ttl    time.Duration
	cache  *cache.LRUExpireCache
}

func newBearerTokens(review tokenReviewer, ttl time.Duration, clk cache.Clock) *bearerTokens {
	return &bearerTokens{review: review, ttl: ttl, cache: cache.NewLRUExpireCacheWithClock(tokenCacheSize, clk)}
}

// apiTokenReviewer creates TokenReviews on the API server.
func apiTokenReviewer(cfg *rest.Config) (tokenReviewer, error) {
	client, err := reviewClient(cfg, authenticationv1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, token string) (*authenticationv1.TokenReviewStatus, error) {
		review := &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}
		out := &authenticationv1.TokenReview{}
		if err := create(ctx, client, "tokenreviews", review, out); err != nil {
			return nil, err
		}
		return &out.Status, nil
	}, nil
}

// tokenResult is a cached review.
type tokenResult struct {
	user *User
	err  error
}

func (b *bearerTokens) Authenticate(r *http.Request) (*User, bool, error) {
	token, ok := bearerToken(r)
	if !ok {
		return nil, false, nil
	}
	key := sha256.Sum256([]byte(token)) // the token itself is not kept
	v, cached := b.cache.Get(key)
	if !cached {
		status, err := b.review(r.Context(), token)
		if err != nil {
			return nil, false, err
		}
		v = reviewed(status)
		b.cache.Add(key, v, b.ttl)
	}
	res := v.(tokenResult)
	if res.user != nil {
		// As upstream: once the token did its work, no handler (nor the
		// runtime's streaming server behind the proxy) gets to see it.
		r.Header.Del("Authorization")
	}
	return res.user, res.user != nil, res.err
}

// reviewed is what a review's answer means for the request.
func reviewed(status *authenticationv1.TokenReviewStatus) tokenResult {
	res := tokenResult{err: errInvalidToken}
	switch {
	case status.Authenticated:
		res = tokenResult{user: &User{Name: status.User.Username, UID: status.User.UID, Groups: status.User.Groups, Extra: extra(status.User.Extra)}}
	case status.Error != "":
		res.err = errors.New(status.Error)
	}
	return res
}

// bearerToken is the request's bearer token, read as upstream does: the
// scheme in any case, an empty token is none.
func bearerToken(r *http.Request) (string, bool) {
	parts := strings.SplitN(strings.TrimSpace(r.Header.Get("Authorization")), " ", 3)
	if len(parts) < 2 || !strings.EqualFold(parts[0], "bearer") || parts[1] == "" {
		return "", false
	}
	return parts[1], true
}

func extra(in map[string]authenticationv1.ExtraValue) map[string][]string {
	if in == nil {
		return nil
	}
	out := make(map[string][]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}
