package stats

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"

	"github.com/microlet/microlet/core/pluginhost"
)

// The kubelet's paths of the handlers.
const (
	SummaryPath         = "/stats/summary"
	ResourceMetricsPath = "/metrics/resource"
)

// SummaryHandler serves /stats/summary as the kubelet does: GET or POST,
// ?only_cpu_and_memory=true for cpu and memory alone, the plugin's last
// measurement (external callers never force one), the Summary as JSON
// indented by one space, and "Internal Error: ..." with 500 when the
// summary fails. When no stats plugin serves (not configured, starting,
// restarting, failed) it answers 503.
func (p *Provider) SummaryHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodPost {
			w.Header().Set("Allow", "GET, POST")
			http.Error(w, "405: Method Not Allowed", http.StatusMethodNotAllowed)
			return
		}
		if err := r.ParseForm(); err != nil {
			p.fail(w, r, fmt.Errorf("parse form failed: %w", err))
			return
		}
		// Exactly one value, exactly "true", as the kubelet reads it.
		only := r.Form["only_cpu_and_memory"]
		var (
			summary any
			err     error
		)
		if len(only) == 1 && only[0] == "true" {
			summary, err = p.cpuAndMemory(r.Context())
		} else {
			summary, err = p.Summary(r.Context(), false)
		}
		if err != nil {
			p.fail(w, r, err)
			return
		}
		body, err := json.MarshalIndent(summary, "", " ")
		if err != nil {
			p.fail(w, r, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write(body)
	})
}

// fail answers 503 while no stats plugin serves, and the kubelet's 500
// otherwise.
func (p *Provider) fail(w http.ResponseWriter, r *http.Request, err error) {
	if errors.Is(err, pluginhost.ErrUnavailable) {
		// Not an error of this handler: the plugin host reports the
		// plugin's state, and the caller gets the reason.
		p.log.Debug("no stats for /stats/summary: the stats plugin is unavailable", "request", r.URL.String(), "error", err)
		http.Error(w, "Service Unavailable: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	p.log.Error("HTTP InternalServerError serving", "request", r.URL.String(), "error", err)
	http.Error(w, "Internal Error: "+err.Error(), http.StatusInternalServerError)
}
