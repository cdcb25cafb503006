package auth

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeAccessReviews allows what allowed names (by subresource) and counts
// the reviews it was asked.
type fakeAccessReviews struct {
	allowed map[string]bool
	err     error
	specs   []authorizationv1.SubjectAccessReviewSpec
}

func (f *fakeAccessReviews) review(_ context.Context, spec authorizationv1.SubjectAccessReviewSpec) (*authorizationv1.SubjectAccessReviewStatus, error) {
	f.specs = append(f.specs, spec)
	if f.err != nil {
		return nil, f.err
	}
	if f.allowed[spec.ResourceAttributes.Subresource] {
		return &authorizationv1.SubjectAccessReviewStatus{Allowed: true, Reason: "RBAC: allowed"}, nil
	}
	return &authorizationv1.SubjectAccessReviewStatus{Reason: "no rule"}, nil
}

func TestAccessReviews(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	fake := &fakeAccessReviews{allowed: map[string]bool{"stats": true}}
	a := newAccessReviews(fake.review, 5*time.Minute, 30*time.Second, clk)
	user := &User{Name: "bob", UID: "u7", Groups: []string{"g1", AllAuthenticated}, Extra: map[string][]string{"scopes": {"a", "b"}}}
	stats := Attributes{User: user, Verb: "get", Subresource: "stats", Name: "node-1", Path: "/stats/summary"}
	proxy := Attributes{User: user, Verb: "create", Subresource: "proxy", Name: "node-1", Path: "/exec/ns/p/c"}

	allowed, reason, err := a.Authorize(context.Background(), stats)
	if !allowed || reason != "RBAC: allowed" || err != nil {
		t.Fatalf("stats: %v %q %v", allowed, reason, err)
	}
	want := authorizationv1.SubjectAccessReviewSpec{
		User: "bob", UID: "u7", Groups: []string{"g1", AllAuthenticated},
		Extra:              map[string]authorizationv1.ExtraValue{"scopes": {"a", "b"}},
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Version: "v1", Resource: "nodes", Subresource: "stats", Name: "node-1"},
	}
	if !reflect.DeepEqual(fake.specs[0], want) {
		t.Errorf("review\n%+v\nwant\n%+v", fake.specs[0], want)
	}
	if allowed, _, _ := a.Authorize(context.Background(), proxy); allowed {
		t.Error("proxy create allowed")
	}

	// Allowed answers last 5m, denied ones 30s.
	a.Authorize(context.Background(), stats)
	a.Authorize(context.Background(), proxy)
	if len(fake.specs) != 2 {
		t.Errorf("%d reviews, want the two first ones only (cached)", len(fake.specs))
	}
	clk.Step(31 * time.Second)
	a.Authorize(context.Background(), stats)
	a.Authorize(context.Background(), proxy)
	if len(fake.specs) != 3 || fake.specs[2].ResourceAttributes.Subresource != "proxy" {
		t.Errorf("after 31s only the denial is asked again; reviews: %d", len(fake.specs))
	}
	clk.Step(5 * time.Minute)
	a.Authorize(context.Background(), stats)
	if len(fake.specs) != 4 {
		t.Errorf("after 5m the allowance is asked again; reviews: %d", len(fake.specs))
	}

	// Another user, verb or subresource is another review.
	other := stats
	other.User = &User{Name: "carol"}
	a.Authorize(context.Background(), other)
	if len(fake.specs) != 5 {
		t.Errorf("another user's request used the cache; reviews: %d", len(fake.specs))
	}

	fake.err = errors.New("apiserver down")
	fresh := Attributes{User: user, Verb: "get", Subresource: "metrics", Name: "node-1"}
	for range 2 {
		if _, _, err := a.Authorize(context.Background(), fresh); err == nil {
			t.Error("a failed review gives no error")
		}
	}
	if len(fake.specs) != 7 {
		t.Errorf("failed reviews were cached; reviews: %d", len(fake.specs))
	}
}

func TestBuild(t *testing.T) {
	_, caFile := newCA(t, "ca")
	clk := clocktesting.NewFakeClock(time.Now())
	for _, tc := range []struct {
		name    string
		opts    Options
		r       reviewers
		wantErr string
	}{
		{name: "always allow, nothing to authenticate with", opts: Options{Mode: ModeAlwaysAllow}},
		{name: "webhook without the API server denies", opts: Options{Mode: ModeWebhook}},
		{name: "unknown mode", opts: Options{Mode: "RBAC"}, wantErr: `unknown authorization mode "RBAC"`},
		{name: "missing CA file", opts: Options{Mode: ModeAlwaysAllow, ClientCAFile: "/nonexistent"}, wantErr: "client CA file"},
		{name: "everything", opts: Options{Mode: ModeWebhook, ClientCAFile: caFile, TokenWebhook: true, Anonymous: true},
			r: reviewers{token: (&fakeTokenReviews{}).review, access: (&fakeAccessReviews{}).review}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, err := build(tc.opts, tc.r, clk)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (a.ClientCAs() != nil) != (tc.opts.ClientCAFile != "") {
				t.Errorf("client CAs %v with CA file %q", a.ClientCAs(), tc.opts.ClientCAFile)
			}
			allowed, _, err := a.authorizer.Authorize(context.Background(), Attributes{User: &User{Name: "u"}, Verb: "get", Subresource: "pods"})
			if wantAllowed := tc.opts.Mode == ModeAlwaysAllow; allowed != wantAllowed || err != nil {
				t.Errorf("allowed %v, %v; want %v", allowed, err, wantAllowed)
			}
		})
	}
}

// TestReviewReason: a review the API server could not evaluate says why,
// instead of an empty reason.
func TestReviewReason(t *testing.T) {
	for _, tc := range []struct {
		status authorizationv1.SubjectAccessReviewStatus
		want   string
	}{
		{authorizationv1.SubjectAccessReviewStatus{Reason: "no rule"}, "no rule"},
		{authorizationv1.SubjectAccessReviewStatus{EvaluationError: "webhook down"}, "evaluation error: webhook down"},
		{authorizationv1.SubjectAccessReviewStatus{Reason: "no rule", EvaluationError: "webhook down"}, "no rule; evaluation error: webhook down"},
	} {
		if got := reviewReason(&tc.status); got != tc.want {
			t.Errorf("reviewReason(%+v) = %q, want %q", tc.status, got, tc.want)
		}
	}
}
