//go:build e2e

package nodee2e

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// manifestServer serves the node's static_pod_url from loopback: one
// body, changed by the test, or an error status.
type manifestServer struct {
	mu     sync.Mutex
	body   string
	status int
	// tokens are the X-Token headers of the requests received.
	tokens map[string]bool
}

func (s *manifestServer) serve(body string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.body, s.status = withImage(body), http.StatusOK
}

func (s *manifestServer) fail(status int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.status = status
}

func (s *manifestServer) sawToken(token string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.tokens[token]
}

func (s *manifestServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tokens[r.Header.Get("X-Token")] = true
	if s.status != http.StatusOK {
		http.Error(w, "failing on purpose", s.status)
		return
	}
	fmt.Fprint(w, s.body)
}

// TestURLSource: pods served at static_pod_url (fetched every second, with
// the configured header) are added, replaced when their manifest changes,
// kept while the server fails, and removed when the body no longer holds
// them.
func TestURLSource(t *testing.T) {
	t.Parallel()
	src := &manifestServer{tokens: map[string]bool{}}
	src.serve(podList(sleeper("fromurl"), sleeper("other")))
	srv := httptest.NewServer(src)
	t.Cleanup(srv.Close)
	n := startNode(t, nodeOptions{settings: []string{
		fmt.Sprintf("static_pod_url = %q", srv.URL+"/pods"),
		`static_pod_url_header = { "X-Token" = ["e2e"] }`,
		`http_check_frequency = "1s"`,
	}})

	first := n.waitPod("fromurl", "running and ready", runningAndReady)
	other := n.waitPod("other", "running and ready", runningAndReady)
	if !src.sawToken("e2e") {
		t.Errorf("no request carried the configured X-Token header; saw %v", src.tokens)
	}

	// A changed manifest is a new pod, as for a file.
	src.serve(podList(sleeper("fromurl")+"    env: [{name: VERSION, value: \"2\"}]\n", sleeper("other")))
	second := n.waitPod("fromurl", "replaced by a new pod, running and ready", func(p *v1.Pod) bool {
		return p.UID != first.UID && runningAndReady(p)
	})
	n.waitRuntimeStopped(first.UID)

	// A failing server keeps the last good set.
	src.fail(http.StatusInternalServerError)
	n.expectLog("the failed fetch is logged", "cannot fetch the static pod URL", srv.URL)
	time.Sleep(settleTime)
	for _, want := range []*v1.Pod{second, other} {
		p := n.waitPod(podBaseName(want), "kept while the server fails", runningAndReady)
		if p.UID != want.UID {
			t.Errorf("pod %s was replaced while the server failed: UID %s, was %s", want.Name, p.UID, want.UID)
		}
	}

	// A pod the body no longer holds is removed; the other stays.
	src.serve(sleeper("other"))
	n.expectLog("the recovery is logged", "the static pod URL can be fetched again")
	n.waitPodGone("fromurl")
	n.waitRuntimeStopped(second.UID)
	if p := n.waitPod("other", "still running", runningAndReady); p.UID != other.UID {
		t.Errorf("pod other was replaced: UID %s, was %s", p.UID, other.UID)
	}

	// An empty body means no pods.
	src.serve("")
	n.waitPodGone("other")
	n.waitRuntimeStopped(other.UID)
}

// podBaseName is the name a static pod's manifest gives it: its name on
// the node without the node's suffix.
func podBaseName(p *v1.Pod) string {
	return p.Name[:len(p.Name)-len("-"+nodeName)]
}
