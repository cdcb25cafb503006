package shutdown

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// shutdownGauges reads the kubelet's two gauges from reg.
func shutdownGauges(t *testing.T, reg *prometheus.Registry) (start, end float64) {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	found := 0
	for _, f := range families {
		switch f.GetName() {
		case "kubelet_graceful_shutdown_start_time_seconds":
			start = f.GetMetric()[0].GetGauge().GetValue()
			found++
		case "kubelet_graceful_shutdown_end_time_seconds":
			end = f.GetMetric()[0].GetGauge().GetValue()
			found++
		}
	}
	if found != 2 {
		t.Fatalf("%d of the two kubelet_graceful_shutdown_*_time_seconds gauges registered", found)
	}
	return start, end
}

// TestRecord: a shutdown's start is stored with no end (the gauge's end
// back to 0) and its end added after; a new manager's load sets the
// gauges from the file; a missing file is no shutdown yet and a corrupt
// one an error, the gauges untouched.
func TestRecord(t *testing.T) {
	dir := t.TempDir()
	reg := prometheus.NewPedanticRegistry()
	r, err := newRecord(dir, reg)
	if err != nil {
		t.Fatal(err)
	}
	if err := r.load(); err != nil {
		t.Fatalf("load without a file: %v", err)
	}
	if start, end := shutdownGauges(t, reg); start != 0 || end != 0 {
		t.Errorf("gauges before any shutdown = %v, %v", start, end)
	}
	begin := time.Date(2026, 3, 1, 10, 0, 0, 500, time.UTC)
	if err := r.begin(begin); err != nil {
		t.Fatal(err)
	}
	var st state
	readState(t, filepath.Join(dir, StateFile), &st)
	if !st.StartTime.Equal(begin) || !st.EndTime.IsZero() {
		t.Errorf("state after begin = %+v", st)
	}
	if start, end := shutdownGauges(t, reg); start != float64(begin.Unix()) || end != 0 {
		t.Errorf("gauges after begin = %v, %v", start, end)
	}
	done := begin.Add(42 * time.Second)
	if err := r.finish(begin, done); err != nil {
		t.Fatal(err)
	}
	readState(t, filepath.Join(dir, StateFile), &st)
	if !st.StartTime.Equal(begin) || !st.EndTime.Equal(done) {
		t.Errorf("state after finish = %+v", st)
	}

	reg2 := prometheus.NewPedanticRegistry()
	r2, err := newRecord(dir, reg2)
	if err != nil {
		t.Fatal(err)
	}
	if err := r2.load(); err != nil {
		t.Fatal(err)
	}
	if start, end := shutdownGauges(t, reg2); start != float64(begin.Unix()) || end != float64(done.Unix()) {
		t.Errorf("gauges loaded = %v, %v", start, end)
	}

	if err := os.WriteFile(filepath.Join(dir, StateFile), []byte("{"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := r2.load(); err == nil {
		t.Error("a corrupt state file loaded")
	}
}

func readState(t *testing.T, path string, st *state) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, st); err != nil {
		t.Fatalf("%s: %q: %v", path, data, err)
	}
}
