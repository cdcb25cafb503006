package workers

import (
	"net/http"
	"testing"

	probesv1 "github.com/microlet/microlet/proto/microlet/probes/v1"
)

// A success that deserves a warning (a redirect to another host, left
// unfollowed) is reported with warning set, for the core's ProbeWarning
// event.
func TestWarningIsReported(t *testing.T) {
	t.Parallel()
	port := serveHTTP(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, "http://elsewhere.invalid/", http.StatusFound) // not followed: another host
	}))
	h := serve(t, newFakeHost(nil))
	w := openWatch(t, h.Probes())
	c := containerProbes("c1", port)
	c.Readiness = httpProbe(port)
	if _, err := h.Probes().SetContainerProbes(t.Context(), &probesv1.SetContainerProbesRequest{Container: c}); err != nil {
		t.Fatal(err)
	}
	seen := w.next(t, "readiness", of("c1", readiness, success))
	if r := seen[len(seen)-1]; !r.GetWarning() || r.GetAttempt() != success || r.GetMessage() == "" {
		t.Errorf("result %v; want a successful attempt with warning set and its message", r)
	}
}
