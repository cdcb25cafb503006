// Package healthz holds the core's health checks, served on /healthz.
package healthz

import (
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
)

// Healthz serves /healthz in the Kubernetes style: plain "ok" when every
// check passes, HTTP 500 naming the failed checks otherwise, and one line per
// check with ?verbose. /healthz/<check> runs one check; ?exclude=<check>
// skips one.
type Healthz struct {
	mu     sync.RWMutex
	checks map[string]func() error
}

// NewHealthz returns a Healthz with the "ping" check, which always passes.
func NewHealthz() *Healthz {
	h := &Healthz{checks: map[string]func() error{}}
	h.Add("ping", func() error { return nil })
	return h
}

// Add registers (or replaces) a check.
func (h *Healthz) Add(name string, check func() error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.checks[name] = check
}

// Remove drops a check.
func (h *Healthz) Remove(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	delete(h.checks, name)
}

// Register mounts /healthz and /healthz/<check> on mux.
func (h *Healthz) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /healthz", h.serveAll)
	mux.HandleFunc("GET /healthz/{check}", h.serveOne)
}

func (h *Healthz) serveAll(w http.ResponseWriter, r *http.Request) {
	excluded := map[string]bool{}
	for _, name := range r.URL.Query()["exclude"] {
		excluded[name] = true
	}
	h.mu.RLock()
	names := make([]string, 0, len(h.checks))
	for name := range h.checks {
		if !excluded[name] {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	var report strings.Builder
	var failed []string
	for _, name := range names {
		if err := h.checks[name](); err != nil {
			failed = append(failed, name)
			fmt.Fprintf(&report, "[-]%s failed: %v\n", name, err)
		} else {
			fmt.Fprintf(&report, "[+]%s ok\n", name)
		}
	}
	h.mu.RUnlock()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if len(failed) > 0 {
		w.WriteHeader(http.StatusInternalServerError)
		fmt.Fprintf(w, "%shealthz check failed: %s\n", report.String(), strings.Join(failed, ", "))
		return
	}
	if _, verbose := r.URL.Query()["verbose"]; verbose {
		fmt.Fprintf(w, "%shealthz check passed\n", report.String())
		return
	}
	fmt.Fprint(w, "ok")
}

func (h *Healthz) serveOne(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("check")
	h.mu.RLock()
	check, ok := h.checks[name]
	h.mu.RUnlock()
	if !ok {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	if err := check(); err != nil {
		http.Error(w, fmt.Sprintf("[-]%s failed: %v", name, err), http.StatusInternalServerError)
		return
	}
	fmt.Fprint(w, "ok")
}
