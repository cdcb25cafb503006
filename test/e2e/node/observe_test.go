//go:build e2e

package nodee2e

import (
	"fmt"
	"io"
	"maps"
	"net/http"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

var httpClient = &http.Client{Timeout: 10 * time.Second}

// healthz GETs /healthz<suffix> and returns the status code and body; 0
// when the core does not answer.
func (n *testNode) healthz(suffix string) (int, string) {
	resp, err := httpClient.Get("http://" + n.healthzAddr + "/healthz" + suffix)
	if err != nil {
		return 0, err.Error()
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}

// healthzChecks are the names of the checks /healthz?verbose lists.
func (n *testNode) healthzChecks() []string {
	_, body := n.healthz("?verbose")
	var names []string
	for _, line := range strings.Split(body, "\n") {
		if name, ok := strings.CutPrefix(line, "[+]"); ok {
			names = append(names, strings.TrimSuffix(name, " ok"))
		} else if name, ok := strings.CutPrefix(line, "[-]"); ok {
			names = append(names, strings.SplitN(name, " ", 2)[0])
		}
	}
	sort.Strings(names)
	return names
}

// metric reads one sample of the core's /metrics: the series of name with
// exactly the given labels.
func (n *testNode) metric(name string, labels map[string]string) (float64, bool) {
	n.t.Helper()
	return n.metricAt("/metrics", name, labels)
}

// metricAt reads one sample of the metrics the node API serves on path
// (/metrics, /metrics/probes, ...).
func (n *testNode) metricAt(path, name string, labels map[string]string) (float64, bool) {
	n.t.Helper()
	resp, err := httpClient.Get("http://" + n.readOnlyAddr + path)
	if err != nil {
		n.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		n.t.Fatalf("GET %s: %v", path, err)
	}
	family, ok := families[name]
	if !ok {
		return 0, false
	}
	for _, m := range family.GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if maps.Equal(got, labels) {
			switch {
			case m.GetCounter() != nil:
				return m.GetCounter().GetValue(), true
			case m.GetGauge() != nil:
				return m.GetGauge().GetValue(), true
			}
		}
	}
	return 0, false
}

// expectLog waits until one line of the core's log holds every fragment.
func (n *testNode) expectLog(what string, fragments ...string) {
	n.t.Helper()
	n.eventually(what, func() (bool, string) {
		for _, line := range strings.Split(n.log.String(), "\n") {
			if containsAll(line, fragments) {
				return true, ""
			}
		}
		return false, fmt.Sprintf("no log line holds all of %q", fragments)
	})
}

func containsAll(s string, fragments []string) bool {
	for _, f := range fragments {
		if !strings.Contains(s, f) {
			return false
		}
	}
	return true
}
