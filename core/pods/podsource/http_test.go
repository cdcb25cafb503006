package podsource

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// manifestServer serves a body that tests change, on loopback, and counts
// requests.
type manifestServer struct {
	mu       sync.Mutex
	body     string
	code     int
	requests int
	polled   chan struct{}
	header   string
}

func (s *manifestServer) set(code int, body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.code, s.body = code, body
}

func (s *manifestServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	s.requests++
	s.header = r.Header.Get("X-Node-Token")
	code, body := s.code, s.body
	s.mu.Unlock()
	w.WriteHeader(code)
	w.Write([]byte(body))
	select {
	case s.polled <- struct{}{}:
	default:
	}
}

// waitPolls waits until the source has fetched n more times.
func (s *manifestServer) waitPolls(t *testing.T, n int) {
	t.Helper()
	for range n {
		select {
		case <-s.polled:
		case <-time.After(30 * time.Second):
			t.Fatal("the source stopped polling")
		}
	}
}

func startHTTP(t *testing.T, srv *manifestServer, logs *logBuffer) (*HTTP, <-chan Update) {
	t.Helper()
	ts := httptest.NewServer(srv)
	t.Cleanup(ts.Close)
	h, err := NewHTTP(HTTPConfig{
		URL:            ts.URL + "/pods?token=secret",
		Header:         http.Header{"X-Node-Token": {"abc"}},
		CheckFrequency: 10 * time.Millisecond,
		NodeName:       "node1",
	}, testLogger(logs), prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	out := make(chan Update)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		h.Run(ctx, out)
		close(done)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return h, out
}

const podList = `apiVersion: v1
kind: PodList
items:
- metadata:
    name: a
  spec:
    containers:
    - name: c
      image: x:1
- metadata:
    name: b
    namespace: kube-system
  spec:
    containers:
    - name: c
      image: x:1
`

func TestHTTPSource(t *testing.T) {
	srv := &manifestServer{code: http.StatusOK, body: podList, polled: make(chan struct{}, 1)}
	logs := &logBuffer{}
	h, out := startHTTP(t, srv, logs)

	u := next(t, out)
	if u.Source != HTTPSource || u.Op != OpSet || names(u.Pods) != "default/a-node1,kube-system/b-node1" {
		t.Fatalf("first update %s %s [%s]", u.Source, u.Op, names(u.Pods))
	}
	srv.mu.Lock()
	if srv.header != "abc" {
		t.Errorf("header X-Node-Token %q; want abc", srv.header)
	}
	srv.mu.Unlock()

	// An unchanged body sends nothing: had it, the next update would not be
	// the single pod.
	srv.waitPolls(t, 3)
	srv.set(http.StatusOK, manifest("a", "x:1"))
	if u = next(t, out); names(u.Pods) != "default/a-node1" {
		t.Fatalf("after serving one pod: [%s]", names(u.Pods))
	}

	// Failures keep the last good set: nothing is sent for them.
	srv.set(http.StatusInternalServerError, "oops")
	srv.waitPolls(t, 3)
	if n := logs.count("cannot fetch the static pod URL", "500 Internal Server Error"); n != 1 {
		t.Errorf("%d log lines about the failing fetch; want 1", n)
	}
	srv.set(http.StatusOK, podList+"      ports:\n      - containerPort: 0\n")
	srv.waitPolls(t, 3)
	if n := testutil.ToFloat64(h.errors.WithLabelValues(HTTPSource, h.manifest)); n != 1 {
		t.Errorf("%s = %v; want 1 for one broken body", manifestErrorsName, n)
	}
	if n := logs.count("serves pods that cannot be used", "line 18: items[1].spec.containers[0].ports[0].containerPort: Required value"); n != 1 {
		t.Errorf("%d log lines about the broken body; want 1:\n%s", n, logs.buf.String())
	}
	if n := logs.count("token=secret"); n != 0 {
		t.Errorf("the URL's query (which may hold a token) was logged")
	}

	srv.set(http.StatusOK, "")
	if u = next(t, out); u.Op != OpSet || len(u.Pods) != 0 {
		t.Fatalf("after an empty body: %s [%s]; want an empty SET", u.Op, names(u.Pods))
	}
}

func TestNewHTTPValidatesConfig(t *testing.T) {
	for _, cfg := range []HTTPConfig{
		{URL: "ftp://127.0.0.1/pods", NodeName: "n"},
		{URL: "/pods", NodeName: "n"},
		{URL: "http://127.0.0.1/pods"},
	} {
		if _, err := NewHTTP(cfg, testLogger(&logBuffer{}), prometheus.NewRegistry()); err == nil {
			t.Errorf("NewHTTP(%+v) accepted", cfg)
		}
	}
}
