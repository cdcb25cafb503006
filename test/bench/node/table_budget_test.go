//go:build e2e

package nodebench

import (
	"strings"
	"testing"
	"time"
)

// TestTableVerdicts feeds the table the medians of a real run (2026-11-27,
// nine runs) and checks each budget's verdict, the one it misses included.
func TestTableVerdicts(t *testing.T) {
	s := func(seconds ...float64) []time.Duration {
		out := make([]time.Duration, len(seconds))
		for i, v := range seconds {
			out[i] = time.Duration(v * float64(time.Second))
		}
		return out
	}
	sized := func(n100, n110 []time.Duration) map[int][]time.Duration {
		return map[int][]time.Duration{100: n100, 110: n110}
	}
	cpu := map[int][]cpuUse{100: {{}}, 110: {{}}} // the samples' part, not checked here
	all := map[string]*figures{
		"floor": {system: "floor", starts: sized(s(25.23), s(28.37)), stops: sized(s(9.95), s(12.44)), startCPU: cpu},
		"kubelet": {system: "kubelet", agent: true, starts: sized(s(26.59), s(33.93)), stops: sized(s(9.03), s(12.24)), startCPU: cpu,
			memory: memory{rssKB: 86088, pssKB: 84685, anonKB: 28467}, millicores: 38.0},
		"microlet": {system: "microlet", agent: true, starts: sized(s(24.88), s(30.58)), stops: sized(s(9.08), s(11.97)), startCPU: cpu,
			memory: memory{rssKB: 66253, pssKB: 58982, anonKB: 42598}, millicores: 12.5},
	}
	sizes := batchSizes
	batchSizes = []int{100, 110}
	t.Cleanup(func() { batchSizes = sizes })
	var out strings.Builder
	printTable(&out, all)
	for _, want := range []struct{ row, verdict string }{
		{"start, 100 pods", "<= 1.10x floor ok, <= 1.00x kubelet ok"},
		{"start, 110 pods", "<= 1.10x floor ok, <= 1.00x kubelet ok"},
		{"stop, 100 pods", "<= 1.00x kubelet MISSED"},
		{"stop, 110 pods", "<= 1.00x kubelet ok"},
		{"PSS (MB)", "<= 0.70x kubelet ok"},
		{"idle CPU (millicores)", "<= 1.00x kubelet ok"},
		{"RSS (MB)", "-"},
	} {
		line := lineStarting(out.String(), want.row)
		if !strings.HasSuffix(strings.TrimSpace(line), want.verdict) {
			t.Errorf("row %q: %q, want it to end in %q", want.row, line, want.verdict)
		}
	}
}

func lineStarting(text, prefix string) string {
	for _, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), prefix) {
			return line
		}
	}
	return ""
}
