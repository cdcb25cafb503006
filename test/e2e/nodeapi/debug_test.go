//go:build e2e

package nodeapie2e

import (
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestProfilesOutlastingTheWriteTimeout: a CPU profile, trace or delta
// profile asked for as long as the server's write timeout (4 h) or longer
// is refused at once, as net/http/pprof did before Go 1.23; a short one is
// served.
func TestProfilesOutlastingTheWriteTimeout(t *testing.T) {
	n := startAPINode(t, nodeOptions{})
	for _, path := range []string{"/debug/pprof/profile?seconds=14400", "/debug/pprof/trace?seconds=100000", "/debug/pprof/heap?seconds=20000"} {
		code, body := n.GetWithin(10*time.Second, path)
		if code != http.StatusBadRequest || !strings.Contains(body, "profile duration exceeds server's WriteTimeout") {
			t.Errorf("GET %s = %d %.100q, want 400", path, code, body)
		}
	}
	if code, body := n.GetWithin(10*time.Second, "/debug/pprof/profile?seconds=1"); code != http.StatusOK {
		t.Errorf("GET /debug/pprof/profile?seconds=1 = %d %.100q", code, body)
	}
}
