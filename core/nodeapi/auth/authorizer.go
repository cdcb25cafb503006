package auth

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	"k8s.io/apimachinery/pkg/util/cache"
	"k8s.io/client-go/rest"
)

// Authorization modes, the kubelet's.
const (
	ModeAlwaysAllow = "AlwaysAllow"
	ModeWebhook     = "Webhook"
)

// sarCacheSize bounds the review cache, upstream's webhook authorizer's.
const sarCacheSize = 8192

// Authorizer decides whether a user may do what attributes say. err means
// it could not decide.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (allowed bool, reason string, err error)
}

// alwaysAllow is the AlwaysAllow mode.
type alwaysAllow struct{}

func (alwaysAllow) Authorize(context.Context, Attributes) (bool, string, error) { return true, "", nil }

// denyAll is the Webhook mode without an API server to ask.
type denyAll struct{}

func (denyAll) Authorize(context.Context, Attributes) (bool, string, error) {
	return false, "authorization mode Webhook has no API server (kubeconfig) to ask", nil
}

// accessReviewer reviews one access; the API server in production.
type accessReviewer func(ctx context.Context, spec authorizationv1.SubjectAccessReviewSpec) (*authorizationv1.SubjectAccessReviewStatus, error)

// apiAccessReviewer creates SubjectAccessReviews on the API server.
func apiAccessReviewer(cfg *rest.Config) (accessReviewer, error) {
	client, err := reviewClient(cfg, authorizationv1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	return func(ctx context.Context, spec authorizationv1.SubjectAccessReviewSpec) (*authorizationv1.SubjectAccessReviewStatus, error) {
		out := &authorizationv1.SubjectAccessReview{}
		if err := create(ctx, client, "subjectaccessreviews", &authorizationv1.SubjectAccessReview{Spec: spec}, out); err != nil {
			return nil, err
		}
		return &out.Status, nil
	}, nil
}

// accessReviews is the Webhook mode: a SubjectAccessReview on
// nodes/<subresource> of the node, allowed answers cached for allowTTL and
// the others for denyTTL (upstream's cacheAuthorizedTTL and
// cacheUnauthorizedTTL). Failures to ask are not cached.
type accessReviews struct {
	review            accessReviewer
	allowTTL, denyTTL time.Duration
	cache             *cache.LRUExpireCache
}

func newAccessReviews(review accessReviewer, allowTTL, denyTTL time.Duration, clk cache.Clock) *accessReviews {
	return &accessReviews{review: review, allowTTL: allowTTL, denyTTL: denyTTL, cache: cache.NewLRUExpireCacheWithClock(sarCacheSize, clk)}
}

// accessResult is a cached review.
type accessResult struct {
	allowed bool
	reason  string
}

func (a *accessReviews) Authorize(ctx context.Context, attrs Attributes) (bool, string, error) {
	spec := reviewSpec(attrs)
	raw, err := json.Marshal(spec)
	if err != nil {
		return false, "", fmt.Errorf("encode the access review: %w", err)
	}
	key := string(raw)
	if v, ok := a.cache.Get(key); ok {
		res := v.(accessResult)
		return res.allowed, res.reason, nil
	}
	status, err := a.review(ctx, spec)
	if err != nil {
		return false, "", err
	}
	res := accessResult{allowed: status.Allowed, reason: reviewReason(status)}
	ttl := a.denyTTL
	if res.allowed {
		ttl = a.allowTTL
	}
	a.cache.Add(key, res, ttl)
	return res.allowed, res.reason, nil
}

// reviewSpec is the review of attrs, as upstream's webhook authorizer
// builds it for a resource request.
func reviewSpec(attrs Attributes) authorizationv1.SubjectAccessReviewSpec {
	u := attrs.User
	spec := authorizationv1.SubjectAccessReviewSpec{
		User:   u.Name,
		UID:    u.UID,
		Groups: u.Groups,
		ResourceAttributes: &authorizationv1.ResourceAttributes{
			Verb: attrs.Verb, Version: "v1", Resource: "nodes", Subresource: attrs.Subresource, Name: attrs.Name,
		},
	}
	if u.Extra != nil {
		spec.Extra = make(map[string]authorizationv1.ExtraValue, len(u.Extra))
		for k, v := range u.Extra {
			spec.Extra[k] = v
		}
	}
	return spec
}

// reviewReason is the review's reason, with the error that kept the API
// server's authorizers from deciding: a failed review often has no reason.
func reviewReason(status *authorizationv1.SubjectAccessReviewStatus) string {
	switch {
	case status.EvaluationError == "":
		return status.Reason
	case status.Reason == "":
		return "evaluation error: " + status.EvaluationError
	}
	return status.Reason + "; evaluation error: " + status.EvaluationError
}
