package auth

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/hashicorp/go-hclog"
)

// decide answers by subresource: allow, deny, or fail.
type decide map[string]string

func (d decide) Authorize(_ context.Context, a Attributes) (bool, string, error) {
	switch d[a.Subresource] {
	case "allow":
		return true, "", nil
	case "fail":
		return false, "", errors.New("webhook down")
	}
	return false, "", nil
}

func TestFilter(t *testing.T) {
	alice := &User{Name: "alice"}
	for _, tc := range []struct {
		name     string
		authn    Authenticator
		authz    Authorizer
		method   string
		path     string
		wantCode int
		wantBody string
	}{
		{name: "no credentials", authn: staticAuthn{}, authz: decide{}, method: "GET", path: "/pods",
			wantCode: 401, wantBody: "Unauthorized"},
		{name: "bad credentials", authn: staticAuthn{err: errors.New("expired")}, authz: alwaysAllow{}, method: "GET", path: "/pods",
			wantCode: 401, wantBody: "Unauthorized"},
		{name: "allowed", authn: staticAuthn{user: alice}, authz: decide{"stats": "allow"}, method: "GET", path: "/stats/summary",
			wantCode: 200, wantBody: "served"},
		{name: "fine-grained falls back to proxy", authn: staticAuthn{user: alice}, authz: decide{"proxy": "allow"}, method: "GET", path: "/pods",
			wantCode: 200, wantBody: "served"},
		{name: "forbidden lists every subresource", authn: staticAuthn{user: alice}, authz: decide{}, method: "GET", path: "/pods",
			wantCode: 403, wantBody: "Forbidden (user=alice, verb=get, resource=nodes, subresource(s)=[pods proxy])\n"},
		{name: "a websocket GET to exec needs create", authn: staticAuthn{user: alice}, authz: decide{}, method: "GET", path: "/exec/ns/p/c",
			wantCode: 403, wantBody: "Forbidden (user=alice, verb=create, resource=nodes, subresource(s)=[proxy])\n"},
		{name: "authorizer failure", authn: staticAuthn{user: alice}, authz: decide{"metrics": "fail"}, method: "GET", path: "/metrics",
			wantCode: 500, wantBody: "Authorization error (user=alice, verb=get, resource=nodes, subresource=metrics)"},
		{name: "method without a verb", authn: staticAuthn{user: alice}, authz: alwaysAllow{}, method: "OPTIONS", path: "/pods",
			wantCode: 405},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := &Auth{nodeName: "node-1", authenticator: tc.authn, authorizer: tc.authz}
			next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "served") })
			rec := httptest.NewRecorder()
			a.Filter(next, hclog.NewNullLogger()).ServeHTTP(rec, httptest.NewRequest(tc.method, tc.path, nil))
			if rec.Code != tc.wantCode {
				t.Fatalf("code %d, want %d; body %q", rec.Code, tc.wantCode, rec.Body.String())
			}
			if tc.wantBody != "" && rec.Body.String() != tc.wantBody {
				t.Errorf("body %q, want %q", rec.Body.String(), tc.wantBody)
			}
		})
	}
}
