package auth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

func TestClientCerts(t *testing.T) {
	ca, caFile := newCA(t, "client-ca")
	other, _ := newCA(t, "other-ca")
	clk := clocktesting.NewFakeClock(time.Now())
	cas, err := loadCABundle(caFile, clk)
	if err != nil {
		t.Fatal(err)
	}
	a := clientCerts{cas: cas, clock: clk}

	good, err := ca.ClientCert("alice", "dev", "ops")
	if err != nil {
		t.Fatal(err)
	}
	u, ok, err := a.Authenticate(withCert(t, good))
	if err != nil || !ok || u.Name != "alice" || !slices.Equal(u.Groups, []string{"dev", "ops"}) ||
		len(u.Extra[CredentialIDKey]) != 1 || !strings.HasPrefix(u.Extra[CredentialIDKey][0], "X509SHA256=") {
		t.Errorf("a client cert of the CA: %+v, %v, %v", u, ok, err)
	}

	foreign, _ := other.ClientCert("alice", "system:masters")
	if u, ok, err := a.Authenticate(withCert(t, foreign)); err == nil || ok || u != nil {
		t.Errorf("a client cert of another CA: %+v, %v, %v; want an error", u, ok, err)
	}
	serving, _ := ca.ServingCert("alice", []string{"localhost"}, nil)
	if _, ok, err := a.Authenticate(withCert(t, serving)); err == nil || ok {
		t.Errorf("a serving cert of the CA: %v, %v; want an error (not for client auth)", ok, err)
	}
	anonymousCN, _ := ca.ClientCert("")
	if _, ok, err := a.Authenticate(withCert(t, anonymousCN)); err != nil || ok {
		t.Errorf("a cert without a common name: %v, %v; want not recognised", ok, err)
	}
	if _, ok, err := a.Authenticate(httptest.NewRequest("GET", "/pods", nil)); err != nil || ok {
		t.Errorf("no certificate: %v, %v; want not recognised", ok, err)
	}

	// The CA file is read again once it changes: the other CA's certs now
	// pass, the first one's no longer do.
	if err := os.WriteFile(caFile, other.PEM, 0o644); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	os.Chtimes(caFile, later, later)
	if _, ok, err := a.Authenticate(withCert(t, foreign)); ok || err == nil {
		t.Errorf("before the recheck period the old bundle stays: %v, %v", ok, err)
	}
	clk.Step(caRecheckPeriod)
	if u, ok, err := a.Authenticate(withCert(t, foreign)); !ok || err != nil || u.Name != "alice" {
		t.Errorf("after the CA file changed: %+v, %v, %v", u, ok, err)
	}
	if _, ok, _ := a.Authenticate(withCert(t, good)); ok {
		t.Error("a cert of the replaced CA still authenticates")
	}
}

func TestLoadCABundleErrors(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	if _, err := loadCABundle("/nonexistent/ca.pem", clk); err == nil {
		t.Error("a missing CA file loads")
	}
	empty := t.TempDir() + "/empty.pem"
	os.WriteFile(empty, []byte("not pem"), 0o644)
	if _, err := loadCABundle(empty, clk); err == nil || !strings.Contains(err.Error(), "holds no PEM certificate") {
		t.Errorf("a file without certificates: %v", err)
	}
}

// fakeTokenReviews answers reviews from a table and counts them.
type fakeTokenReviews struct {
	users map[string]authenticationv1.UserInfo
	err   error
	calls int
}

func (f *fakeTokenReviews) review(_ context.Context, token string) (*authenticationv1.TokenReviewStatus, error) {
	f.calls++
	if f.err != nil {
		return nil, f.err
	}
	if u, ok := f.users[token]; ok {
		return &authenticationv1.TokenReviewStatus{Authenticated: true, User: u}, nil
	}
	if token == "expired" {
		return &authenticationv1.TokenReviewStatus{Error: "token has expired"}, nil
	}
	return &authenticationv1.TokenReviewStatus{}, nil
}

func TestBearerTokens(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	fake := &fakeTokenReviews{users: map[string]authenticationv1.UserInfo{
		"good": {Username: "system:serviceaccount:ns:sa", UID: "u1", Groups: []string{"system:serviceaccounts"},
			Extra: map[string]authenticationv1.ExtraValue{"k": {"v"}}},
	}}
	b := newBearerTokens(fake.review, 2*time.Minute, clk)

	r := withToken("good")
	u, ok, err := b.Authenticate(r)
	if err != nil || !ok || u.Name != "system:serviceaccount:ns:sa" || u.UID != "u1" || u.Extra["k"][0] != "v" {
		t.Fatalf("a good token: %+v, %v, %v", u, ok, err)
	}
	if r.Header.Get("Authorization") != "" {
		t.Error("the Authorization header is still on the request after it authenticated")
	}
	b.Authenticate(withToken("good"))
	if fake.calls != 1 {
		t.Errorf("%d reviews for the same token within the TTL, want 1", fake.calls)
	}
	clk.Step(2*time.Minute + time.Second)
	b.Authenticate(withToken("good"))
	if fake.calls != 2 {
		t.Errorf("%d reviews after the TTL, want 2", fake.calls)
	}

	for _, tc := range []struct{ token, wantErr string }{{"bad", "invalid bearer token"}, {"expired", "token has expired"}} {
		r := withToken(tc.token)
		if _, ok, err := b.Authenticate(r); ok || err == nil || err.Error() != tc.wantErr {
			t.Errorf("token %q: %v, %v; want %q", tc.token, ok, err, tc.wantErr)
		}
		if r.Header.Get("Authorization") == "" {
			t.Errorf("token %q: the header of a refused token was removed", tc.token)
		}
	}
	calls := fake.calls
	b.Authenticate(withToken("bad"))
	if fake.calls != calls {
		t.Error("a refused token was reviewed again within the TTL")
	}

	fake.err = errors.New("connection refused")
	for range 2 {
		if _, ok, err := b.Authenticate(withToken("other")); ok || err == nil {
			t.Errorf("review failure: %v, %v", ok, err)
		}
	}
	if fake.calls != calls+2 {
		t.Errorf("failed reviews were cached: %d calls, want %d", fake.calls, calls+2)
	}

	for _, header := range []string{"", "Basic abc", "Bearer", "Bearer ", "bearer"} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", header)
		if _, ok, err := b.Authenticate(r); ok || err != nil {
			t.Errorf("header %q: %v, %v; want not recognised", header, ok, err)
		}
	}
	if _, ok, err := b.Authenticate(func() *http.Request {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Authorization", "bEaReR good")
		return r
	}()); !ok || err != nil {
		t.Errorf("the scheme is case-insensitive: %v, %v", ok, err)
	}
}

// staticAuthn answers the same for every request.
type staticAuthn struct {
	user *User
	err  error
}

func (s staticAuthn) Authenticate(*http.Request) (*User, bool, error) {
	return s.user, s.user != nil, s.err
}

func TestUnion(t *testing.T) {
	alice := &User{Name: "alice", Groups: []string{"dev"}}
	none := staticAuthn{}
	failing := staticAuthn{err: errors.New("bad credential")}
	for _, tc := range []struct {
		name      string
		u         union
		wantUser  string
		wantGroup []string
		wantErr   bool
	}{
		{name: "first that recognises wins", u: union{authenticators: []Authenticator{none, staticAuthn{user: alice}, failing}},
			wantUser: "alice", wantGroup: []string{"dev", AllAuthenticated}},
		{name: "a failure does not stop the others", u: union{authenticators: []Authenticator{failing, staticAuthn{user: alice}}},
			wantUser: "alice", wantGroup: []string{"dev", AllAuthenticated}},
		{name: "nothing recognised, no anonymous", u: union{authenticators: []Authenticator{none}}},
		{name: "nothing recognised, anonymous", u: union{authenticators: []Authenticator{none}, anonymous: true},
			wantUser: Anonymous, wantGroup: []string{AllUnauthenticated}},
		{name: "a bad credential is not anonymous", u: union{authenticators: []Authenticator{failing}, anonymous: true}, wantErr: true},
		{name: "no authenticator at all", u: union{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			u, ok, err := tc.u.Authenticate(httptest.NewRequest("GET", "/", nil))
			if (err != nil) != tc.wantErr {
				t.Fatalf("error %v, want error %v", err, tc.wantErr)
			}
			if tc.wantUser == "" {
				if ok || u != nil {
					t.Errorf("got %+v, want nobody", u)
				}
				return
			}
			if !ok || u.Name != tc.wantUser || !slices.Equal(u.Groups, tc.wantGroup) {
				t.Errorf("got %+v, %v; want %s in %v", u, ok, tc.wantUser, tc.wantGroup)
			}
		})
	}
	if !slices.Equal(alice.Groups, []string{"dev"}) {
		t.Errorf("the authenticator's user was modified: %v", alice.Groups)
	}
}
