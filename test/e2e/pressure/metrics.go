//go:build e2e

package pressuree2e

import (
	"maps"
	"net/http"
	"strings"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metric reads one series of the core's /metrics, by name and exact labels.
func (n *Node) Metric(name string, labels map[string]string) (float64, bool) {
	n.t.Helper()
	var value float64
	found := false
	n.eachSeries(name, func(got map[string]string, v float64) {
		if maps.Equal(got, labels) {
			value, found = v, true
		}
	})
	return value, found
}

// MetricSum adds up the series of the core's /metrics named name whose
// labels include labels (those it does not name take any value).
func (n *Node) MetricSum(name string, labels map[string]string) float64 {
	n.t.Helper()
	var sum float64
	n.eachSeries(name, func(got map[string]string, v float64) {
		for k, want := range labels {
			if got[k] != want {
				return
			}
		}
		sum += v
	})
	return sum
}

// eachSeries calls f with the labels and value of every counter or gauge
// series of the core's /metrics named name.
func (n *Node) eachSeries(name string, f func(labels map[string]string, value float64)) {
	n.t.Helper()
	code, body := n.get("/metrics")
	if code != http.StatusOK {
		n.t.Fatalf("GET /metrics: %d %s", code, body)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		n.t.Fatalf("GET /metrics: %v", err)
	}
	for _, m := range families[name].GetMetric() {
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		f(got, m.GetCounter().GetValue()+m.GetGauge().GetValue())
	}
}
