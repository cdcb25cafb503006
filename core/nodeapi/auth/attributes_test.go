package auth

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
)

func TestRequestAttributes(t *testing.T) {
	user := &User{Name: "alice"}
	upgrade := func(protocol string) http.Header {
		return http.Header{"Connection": {"Upgrade"}, "Upgrade": {protocol}}
	}
	for _, tc := range []struct {
		method, path string
		header       http.Header
		verb         string
		subresources []string
	}{
		{"GET", "/stats/summary", nil, "get", []string{"stats"}},
		{"POST", "/stats/summary", nil, "create", []string{"stats"}},
		{"GET", "/stats", nil, "get", []string{"stats"}},
		{"GET", "/statsfoo", nil, "get", []string{"proxy"}},
		{"GET", "/metrics", nil, "get", []string{"metrics"}},
		{"GET", "/metrics/cadvisor", nil, "get", []string{"metrics"}},
		{"GET", "/metrics/resource", nil, "get", []string{"metrics"}},
		{"GET", "/metrics/probes", nil, "get", []string{"metrics"}},
		{"GET", "/logs/", nil, "get", []string{"log"}},
		{"GET", "/logs/syslog", nil, "get", []string{"log"}},
		{"GET", "/logs", nil, "get", []string{"log"}},
		{"POST", "/checkpoint/ns/pod/c", nil, "create", []string{"checkpoint"}},
		{"GET", "/spec/", nil, "get", []string{"proxy"}},
		{"GET", "/pods", nil, "get", []string{"pods", "proxy"}},
		{"GET", "/pods/", nil, "get", []string{"pods", "proxy"}},
		{"GET", "/podsx", nil, "get", []string{"proxy"}},
		{"GET", "/runningpods/", nil, "get", []string{"pods", "proxy"}},
		{"GET", "/runningpods", nil, "get", []string{"pods", "proxy"}},
		{"GET", "/healthz", nil, "get", []string{"healthz", "proxy"}},
		{"GET", "/healthz/syncloop", nil, "get", []string{"healthz", "proxy"}},
		{"GET", "/configz", nil, "get", []string{"configz", "proxy"}},
		{"GET", "/containerLogs/ns/pod/c", nil, "get", []string{"proxy"}},
		{"HEAD", "/pods", nil, "get", []string{"pods", "proxy"}},
		{"PUT", "/pods", nil, "update", []string{"pods", "proxy"}},
		{"PATCH", "/pods", nil, "patch", []string{"pods", "proxy"}},
		{"DELETE", "/pods", nil, "delete", []string{"pods", "proxy"}},
		// Streaming: a GET, upgraded or not, takes create.
		{"POST", "/exec/ns/pod/c", nil, "create", []string{"proxy"}},
		{"GET", "/exec/ns/pod/c", upgrade("websocket"), "create", []string{"proxy"}},
		{"GET", "/exec/ns/pod/uid/c", upgrade("SPDY/3.1"), "create", []string{"proxy"}},
		{"GET", "/exec/ns/pod/c", nil, "create", []string{"proxy"}},
		{"GET", "/attach/ns/pod/c", upgrade("websocket"), "create", []string{"proxy"}},
		{"GET", "/portForward/ns/pod", upgrade("websocket"), "create", []string{"proxy"}},
		{"GET", "/portForward/ns/pod", upgrade("SPDY/3.1"), "create", []string{"proxy"}},
		{"GET", "/run/ns/pod/c", nil, "create", []string{"proxy"}},
		{"HEAD", "/exec/ns/pod/c", nil, "create", []string{"proxy"}},
		{"GET", "/executor", nil, "get", []string{"proxy"}},
		{"GET", "/", nil, "get", []string{"proxy"}},
	} {
		t.Run(tc.method+" "+tc.path, func(t *testing.T) {
			r := httptest.NewRequest(tc.method, tc.path, nil)
			for k, v := range tc.header {
				r.Header[k] = v
			}
			attrs, err := RequestAttributes(user, "node-1", r)
			if err != nil {
				t.Fatal(err)
			}
			var subs []string
			for _, a := range attrs {
				subs = append(subs, a.Subresource)
				if a.Verb != tc.verb || a.Name != "node-1" || a.User != user || a.Path != tc.path {
					t.Errorf("attributes %+v; want verb %s on node-1 for %s", a, tc.verb, tc.path)
				}
			}
			if !slices.Equal(subs, tc.subresources) {
				t.Errorf("subresources %v, want %v", subs, tc.subresources)
			}
		})
	}
}

func TestRequestAttributesUnknownMethod(t *testing.T) {
	for _, method := range []string{"OPTIONS", "TRACE", "CONNECT", "PROPFIND"} {
		_, err := RequestAttributes(&User{Name: "alice"}, "n", httptest.NewRequest(method, "/pods", nil))
		var unknown ErrUnknownMethod
		if !errors.As(err, &unknown) {
			t.Errorf("%s: error %v, want ErrUnknownMethod", method, err)
		}
	}
}
