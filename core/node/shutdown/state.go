package shutdown

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/microlet/microlet/internal/atomicfile"
	"github.com/microlet/microlet/internal/promreg"
)

// StateFile is upstream's record of the last shutdown, in the root dir:
// {"startTime": ..., "endTime": ...}. It outlives the machine's restart,
// so that the metrics tell after it when the last shutdown began and
// whether the pods were all handled (an end time) before the power went.
const StateFile = "graceful_node_shutdown_state"

// state is the file's content, upstream's shape; a zero time is unknown.
type state struct {
	StartTime time.Time `json:"startTime"`
	EndTime   time.Time `json:"endTime"`
}

// record keeps the state file and the kubelet's two gauges of it.
type record struct {
	path       string // "": no file (the manager is off, or a test's)
	start, end prometheus.Gauge
}

func newRecord(dir string, reg prometheus.Registerer) (*record, error) {
	r := &record{
		start: prometheus.NewGauge(prometheus.GaugeOpts{
			Subsystem: "kubelet", Name: "graceful_shutdown_start_time_seconds",
			Help: "Last graceful shutdown start time since unix epoch in seconds",
		}),
		end: prometheus.NewGauge(prometheus.GaugeOpts{
			Subsystem: "kubelet", Name: "graceful_shutdown_end_time_seconds",
			Help: "Last graceful shutdown end time since unix epoch in seconds",
		}),
	}
	if dir != "" {
		r.path = filepath.Join(dir, StateFile)
	}
	if err := promreg.Register(reg, r.start, r.end); err != nil {
		return nil, err
	}
	return r, nil
}

// load sets the gauges from the file a previous run left (upstream
// setMetrics, on start); none is no shutdown recorded yet.
func (r *record) load() error {
	if r.path == "" {
		return nil
	}
	data, err := os.ReadFile(r.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var s state
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("%s: %w", r.path, err)
	}
	if !s.StartTime.IsZero() {
		r.start.Set(unixSeconds(s.StartTime))
	}
	if !s.EndTime.IsZero() {
		r.end.Set(unixSeconds(s.EndTime))
	}
	return nil
}

// begin records a shutdown's start (the end unknown yet); finish its end.
func (r *record) begin(at time.Time) error {
	r.start.Set(unixSeconds(at))
	r.end.Set(0)
	return r.store(state{StartTime: at})
}

func (r *record) finish(start, at time.Time) error {
	r.end.Set(unixSeconds(at))
	return r.store(state{StartTime: start, EndTime: at})
}

func (r *record) store(s state) error {
	if r.path == "" {
		return nil
	}
	data, err := json.Marshal(s)
	if err != nil {
		return err
	}
	return atomicfile.WriteFile(r.path, data, 0o644)
}

// unixSeconds is upstream's timestamp: whole seconds since the epoch.
func unixSeconds(t time.Time) float64 { return float64(t.Unix()) }
