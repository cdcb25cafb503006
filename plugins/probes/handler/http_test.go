package handler

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// probeTarget serves the paths HTTP probes are tested against.
func probeTarget(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("/ok", func(w http.ResponseWriter, _ *http.Request) { _, _ = fmt.Fprint(w, "fine") })
	mux.HandleFunc("/created", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusCreated) })
	mux.HandleFunc("/broken", func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = fmt.Fprint(w, "secret details")
	})
	mux.HandleFunc("/missing", http.NotFound)
	mux.HandleFunc("/redirect-here", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/ok", http.StatusFound) })
	mux.HandleFunc("/redirect-to-broken", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/broken", http.StatusFound) })
	mux.HandleFunc("/redirect-loop", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/redirect-loop", http.StatusFound) })
	mux.HandleFunc("/redirect-away", func(w http.ResponseWriter, r *http.Request) {
		// Another host name for the same loopback server.
		w.Header().Set("Location", "http://localhost:"+r.URL.Port()+"/ok")
		w.WriteHeader(http.StatusMovedPermanently)
		_, _ = fmt.Fprint(w, "moved")
	})
	mux.HandleFunc("/big", func(w http.ResponseWriter, _ *http.Request) {
		_, _ = fmt.Fprint(w, strings.Repeat("b", 3*maxOutputLength))
	})
	mux.HandleFunc("/slow", func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(10 * time.Second):
		}
	})
	mux.HandleFunc("/echo", func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "host=%s ua=%q accept=%q x-probe=%q query=%s", r.Host, r.Header.Values("User-Agent"),
			r.Header.Values("Accept"), r.Header.Values("X-Probe"), r.URL.RawQuery)
	})
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

func TestHTTPGet(t *testing.T) {
	t.Parallel()
	server := probeTarget(t)
	port := portOf(t, server.URL)
	for _, c := range []struct {
		name   string
		action *probesv1.HTTPGetAction
		want   Outcome
	}{
		{"200 succeeds with the body", &probesv1.HTTPGetAction{Path: "/ok", Port: port}, Outcome{Result: success, Output: "fine"}},
		{"any 2xx succeeds", &probesv1.HTTPGetAction{Path: "/created", Port: port}, Outcome{Result: success}},
		{
			"500 fails without the body", &probesv1.HTTPGetAction{Path: "/broken", Port: port},
			Outcome{Result: failure, Output: "HTTP probe failed with statuscode: 500"},
		},
		{"404 fails", &probesv1.HTTPGetAction{Path: "/missing", Port: port}, Outcome{Result: failure, Output: "HTTP probe failed with statuscode: 404"}},
		{"a redirect to the same host is followed", &probesv1.HTTPGetAction{Path: "/redirect-here", Port: port}, Outcome{Result: success, Output: "fine"}},
		{
			"a followed redirect fails where it leads", &probesv1.HTTPGetAction{Path: "/redirect-to-broken", Port: port},
			Outcome{Result: failure, Output: "HTTP probe failed with statuscode: 500"},
		},
		{
			"a redirect to another host succeeds with a warning", &probesv1.HTTPGetAction{Path: "/redirect-away", Port: port},
			Outcome{Result: success, Warning: true, Output: "Probe terminated redirects, Response body: moved"},
		},
		{
			"redirects stop after 10", &probesv1.HTTPGetAction{Path: "/redirect-loop", Port: port},
			Outcome{Result: failure, Output: `Get "/redirect-loop": stopped after 10 redirects`},
		},
		{"the body is read up to 10 KiB", &probesv1.HTTPGetAction{Path: "/big", Port: port}, Outcome{Result: success, Output: strings.Repeat("b", maxOutputLength)}},
		{"the port by name", &probesv1.HTTPGetAction{Path: "/ok", PortName: "web"}, Outcome{Result: success, Output: "fine"}},
		{"the port by a name that is a number", &probesv1.HTTPGetAction{Path: "/ok", PortName: fmt.Sprint(port)}, Outcome{Result: success, Output: "fine"}},
		{
			"an unknown port name cannot run", &probesv1.HTTPGetAction{Path: "/ok", PortName: "nope"},
			Outcome{Result: unknown, Output: `port "nope" is neither a number nor the name of one of the container's ports`},
		},
		{
			"a named port out of range cannot run", &probesv1.HTTPGetAction{Path: "/ok", PortName: "huge"},
			Outcome{Result: unknown, Output: "invalid port number: 70000"},
		},
		{
			"default headers", &probesv1.HTTPGetAction{Path: "/echo?x=1", Port: port},
			Outcome{Result: success, Output: fmt.Sprintf(`host=127.0.0.1:%d ua=["kube-probe/1.34"] accept=["*/*"] x-probe=[] query=x=1`, port)},
		},
		{
			"the probe's headers, Host and User-Agent included; an empty Accept removes it",
			&probesv1.HTTPGetAction{Path: "/echo", Port: port, Headers: []*probesv1.HTTPHeader{
				{Name: "host", Value: "app.example"}, {Name: "user-agent", Value: "mine"}, {Name: "Accept", Value: ""},
				{Name: "x-probe", Value: "a"}, {Name: "X-Probe", Value: "b"},
			}},
			Outcome{Result: success, Output: `host=app.example ua=["mine"] accept=[] x-probe=["a" "b"] query=`},
		},
		{"the host defaults to the pod IP; an explicit one wins", &probesv1.HTTPGetAction{Path: "/ok", Port: port, Host: "127.0.0.1"}, Outcome{Result: success, Output: "fine"}},
		{"the scheme is read in any case", &probesv1.HTTPGetAction{Path: "/ok", Port: port, Scheme: "HTTP"}, Outcome{Result: success, Output: "fine"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			target := Target{ContainerID: "c1", PodIP: "127.0.0.1", Ports: []*typesv1.ContainerPort{
				{Name: "web", ContainerPort: port, Protocol: "TCP"}, {Name: "huge", ContainerPort: 70000},
			}}
			if c.action.Host != "" {
				target.PodIP = "192.0.2.1" // never dialled: the probe's host wins
			}
			if got := NewRunner(nil).Run(t.Context(), probeWith(c.action), target); got != c.want {
				t.Errorf("Run = %+v\nwant  %+v", got, c.want)
			}
		})
	}
}

func TestHTTPGetTimeout(t *testing.T) {
	t.Parallel()
	server := probeTarget(t)
	got := NewRunner(nil).Run(t.Context(), probeWith(&probesv1.HTTPGetAction{Path: "/slow", Port: portOf(t, server.URL)}), Target{PodIP: "127.0.0.1"})
	if got.Result != failure || !strings.Contains(got.Output, "Client.Timeout exceeded") {
		t.Errorf("Run against a server slower than the timeout = %+v; want a failure naming the timeout", got)
	}
}

func TestHTTPGetRefused(t *testing.T) {
	t.Parallel()
	got := NewRunner(nil).Run(t.Context(), probeWith(&probesv1.HTTPGetAction{Path: "/", Port: closedPort(t)}), Target{PodIP: "127.0.0.1"})
	if got.Result != failure || !strings.Contains(got.Output, "connection refused") {
		t.Errorf("Run against a closed port = %+v; want a failure saying the connection was refused", got)
	}
}

// HTTPS probes do not verify the server's certificate.
func TestHTTPSWithoutVerification(t *testing.T) {
	t.Parallel()
	server := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = fmt.Fprintf(w, "tls=%v", r.TLS != nil)
	}))
	t.Cleanup(server.Close)
	got := NewRunner(nil).Run(t.Context(), probeWith(&probesv1.HTTPGetAction{Scheme: "HTTPS", Port: portOf(t, server.URL)}), Target{PodIP: "127.0.0.1"})
	if want := (Outcome{Result: success, Output: "tls=true"}); got != want {
		t.Errorf("Run against a self-signed server = %+v, want %+v", got, want)
	}
}
