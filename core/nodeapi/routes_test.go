package nodeapi

import (
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/microlet/microlet/core/nodeapi/auth"
)

// allDebugging turns every debugging route on.
var allDebugging = debugging{handlers: true, profiling: true, flags: true}

// routedMux is the secure port's router, every route on, with handlers
// that record the route that served the request, and the request they got.
func routedMux() (*http.ServeMux, *route, **http.Request) {
	served, got := new(route), new(*http.Request)
	mux := buildMux(secureEndpoints, allDebugging, func(r route) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) { *served, *got = r, req })
	})
	return mux, served, got
}

// checkRouteAuthorization serves one request and, if a route served it,
// checks that authorization asked for what the route needs: its
// subresource first, and create where the route runs commands.
func checkRouteAuthorization(t *testing.T, mux *http.ServeMux, served *route, got **http.Request, method, target string) {
	t.Helper()
	*served, *got = route{}, nil
	req, err := http.NewRequest(method, "https://node"+target, nil)
	if err != nil {
		return // not a request a client could send
	}
	attrs, err := auth.RequestAttributes(&auth.User{Name: "u"}, "node", req)
	if err != nil {
		return // refused before routing
	}
	mux.ServeHTTP(httptest.NewRecorder(), req)
	if *got == nil {
		return // not routed: 404, 405 or a redirect to a clean path, which is authorized anew
	}
	if (*got).URL.Path != req.URL.Path {
		t.Fatalf("%s %q: the handler saw path %q, authorization %q", method, target, (*got).URL.Path, req.URL.Path)
	}
	if attrs[0].Subresource != served.subresource {
		t.Fatalf("%s %q served by %q (nodes/%s) was authorized as nodes/%s", method, target, served.pattern, served.subresource, attrs[0].Subresource)
	}
	if served.create && attrs[0].Verb != "create" {
		t.Fatalf("%s %q served by %q was authorized with verb %s, want create", method, target, served.pattern, attrs[0].Verb)
	}
}

// TestRouteAuthorization: every route, reached by each of its methods,
// is authorized for what it serves.
func TestRouteAuthorization(t *testing.T) {
	mux, served, got := routedMux()
	for _, r := range routes {
		method, path, _ := strings.Cut(r.pattern, " ")
		if path == "" {
			method, path = http.MethodGet, method
		}
		path = strings.NewReplacer("{$}", "", "{namespace}", "ns", "{pod}", "p", "{uid}", "u", "{container}", "c", "{check}", "ping").Replace(path)
		methods := []string{method}
		if method == http.MethodGet {
			methods = append(methods, http.MethodHead)
		}
		for _, m := range methods {
			checkRouteAuthorization(t, mux, served, got, m, path)
			if *got == nil {
				t.Errorf("%s %s was not routed to %q", m, path, r.pattern)
			}
		}
	}
}

// FuzzRouteAuthorization: whatever the method and path, a request that
// reaches a route was authorized for that route (no encoding, dot segment
// or odd method gets a request past authorization as something else).
func FuzzRouteAuthorization(f *testing.F) {
	for _, seed := range []struct{ method, target string }{
		{"GET", "/pods"}, {"GET", "/stats/summary"}, {"POST", "/exec/ns/p/c"}, {"GET", "/exec/ns/p/u/c?command=sh"},
		{"GET", "/stats/../exec/ns/p/c"}, {"GET", "/stats%2F..%2Fexec/ns/p/c"}, {"GET", "//exec/ns/p/c"},
		{"GET", "/logs/../../etc/shadow"}, {"GET", "/metrics/../run/ns/p/c"}, {"POST", "/run/ns/p/c?cmd=id"},
		{"GET", "/healthz/../configz"}, {"HEAD", "/portForward/ns/p"}, {"GET", "/runningpods/"}, {"GET", "/spec/"},
		{"GET", "/containerLogs/ns/p/c?follow=1"}, {"DELETE", "/pods"}, {"GET", "/Exec/ns/p/c"}, {"GET", "/exec/ns/p/c/"},
		{"GET", "/debug/pprof/heap"}, {"PUT", "/debug/flags/v"}, {"GET", "/debug/pprof/../../exec/ns/p/c"}, {"GET", "/debug/pprof"},
	} {
		f.Add(seed.method, seed.target)
	}
	mux, served, got := routedMux()
	f.Fuzz(func(t *testing.T, method, target string) {
		if !strings.HasPrefix(target, "/") {
			return
		}
		if _, err := url.ParseRequestURI(target); err != nil {
			return
		}
		checkRouteAuthorization(t, mux, served, got, method, target)
	})
}

// TestDebuggingDisabled: without debugging handlers, and on the read-only
// port, the debugging paths answer upstream's 405.
func TestDebuggingDisabled(t *testing.T) {
	for _, tc := range []struct {
		name string
		mux  *http.ServeMux
	}{
		{"secure port, debugging off", buildMux(secureEndpoints, debugging{profiling: true, flags: true}, stubHandler)},
		{"read-only port", buildMux(readOnlyEndpoints, allDebugging, stubHandler)},
	} {
		for _, target := range []string{"/exec/ns/p/c", "/attach/ns/p/c", "/portForward/ns/p", "/run/ns/p/c", "/containerLogs/ns/p/c",
			"/runningpods/", "/logs/", "/logs/syslog", "/debug/pprof/", "/debug/pprof/heap"} {
			for _, method := range []string{http.MethodGet, http.MethodPost} {
				rec := httptest.NewRecorder()
				tc.mux.ServeHTTP(rec, httptest.NewRequest(method, target, nil))
				if rec.Code != http.StatusMethodNotAllowed || rec.Body.String() != "Debug endpoints are disabled.\n" {
					t.Errorf("%s: %s %s = %d %q", tc.name, method, target, rec.Code, rec.Body.String())
				}
			}
		}
		// Upstream leaves /debug/flags/v out of the disabled paths.
		rec := httptest.NewRecorder()
		tc.mux.ServeHTTP(rec, httptest.NewRequest(http.MethodPut, "/debug/flags/v", strings.NewReader("4")))
		if rec.Code != http.StatusNotFound {
			t.Errorf("%s: PUT /debug/flags/v = %d, want 404", tc.name, rec.Code)
		}
	}
	readOnly := buildMux(readOnlyEndpoints, allDebugging, stubHandler)
	for target, want := range map[string]int{"/configz": 404, "/pods": 200, "/metrics/cadvisor": 200, "/stats/summary": 200, "/healthz": 200} {
		rec := httptest.NewRecorder()
		readOnly.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, target, nil))
		if rec.Code != want {
			t.Errorf("read-only port: GET %s = %d, want %d", target, rec.Code, want)
		}
	}
}

// TestDebugGroupsOff: with the debugging routes on, enable_profiling_handler
// and enable_debug_flags_handler each turn their own routes into upstream's
// 405 and leave the others on.
func TestDebugGroupsOff(t *testing.T) {
	served := func(route) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "served") })
	}
	for _, tc := range []struct {
		name             string
		dbg              debugging
		pprof, flags     int
		pprofMsg, flgMsg string
	}{
		{"all on", allDebugging, 200, 200, "served", "served"},
		{"profiling off", debugging{handlers: true, flags: true}, 405, 200, "profiling endpoint is disabled.", "served"},
		{"flags off", debugging{handlers: true, profiling: true}, 200, 405, "served", "flags endpoint is disabled."},
	} {
		mux := buildMux(secureEndpoints, tc.dbg, served)
		for _, req := range []struct {
			method, target string
			code           int
			body           string
		}{
			{"GET", "/debug/pprof/", tc.pprof, tc.pprofMsg},
			{"GET", "/debug/pprof/heap", tc.pprof, tc.pprofMsg},
			{"PUT", "/debug/flags/v", tc.flags, tc.flgMsg},
			{"GET", "/exec/ns/p/c", 200, "served"},
		} {
			rec := httptest.NewRecorder()
			mux.ServeHTTP(rec, httptest.NewRequest(req.method, req.target, nil))
			if rec.Code != req.code || strings.TrimSpace(rec.Body.String()) != req.body {
				t.Errorf("%s: %s %s = %d %q, want %d %q", tc.name, req.method, req.target, rec.Code, rec.Body.String(), req.code, req.body)
			}
		}
	}
}

func stubHandler(route) http.Handler {
	return http.HandlerFunc(func(http.ResponseWriter, *http.Request) {})
}
