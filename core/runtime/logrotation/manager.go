package logrotation

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/internal/promreg"
)

// Runtime is what rotation asks of the CRI runtime.
type Runtime interface {
	ListContainers(ctx context.Context, filter *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error)
	ContainerStatus(ctx context.Context, containerID string, verbose bool) (*runtimeapi.ContainerStatusResponse, error)
	ReopenContainerLog(ctx context.Context, containerID string) error
}

// Options configure a Manager.
type Options struct {
	Runtime Runtime
	// MaxSize is the size at which a log is rotated; MaxFiles (at least 2)
	// bounds a log's files, the live one included.
	MaxSize  int64
	MaxFiles int
	// Interval is how often running containers' logs are checked; Workers
	// how many containers are handled at once.
	Interval   time.Duration
	Workers    int
	Logger     hclog.Logger
	Registerer prometheus.Registerer
	// Now is the clock that names rotations; nil: time.Now.
	Now func() time.Time
}

// Manager rotates the logs of running containers.
type Manager struct {
	opts      Options
	log       hclog.Logger
	rotations prometheus.Counter
	failures  prometheus.Counter
}

// New checks the options; Run rotates.
func New(opts Options) (*Manager, error) {
	if opts.MaxFiles < 2 {
		return nil, fmt.Errorf("container log max files must be at least 2, got %d", opts.MaxFiles)
	}
	if opts.Workers < 1 || opts.Interval <= 0 {
		return nil, fmt.Errorf("container log rotation needs a worker and a positive interval, got %d and %s", opts.Workers, opts.Interval)
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	m := &Manager{
		opts: opts,
		log:  opts.Logger,
		rotations: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: "microlet", Name: "container_log_rotations_total",
			Help: "Container log files rotated.",
		}),
		failures: prometheus.NewCounter(prometheus.CounterOpts{
			Subsystem: "microlet", Name: "container_log_rotation_errors_total",
			Help: "Container log rotations that failed.",
		}),
	}
	if m.log == nil {
		m.log = hclog.NewNullLogger()
	}
	if err := promreg.Register(opts.Registerer, m.rotations, m.failures); err != nil {
		return nil, err
	}
	return m, nil
}

// Run checks the running containers' logs every interval until ctx ends.
// A negative MaxSize turns rotation off (upstream's stub manager).
func (m *Manager) Run(ctx context.Context) {
	if m.opts.MaxSize < 0 {
		m.log.Info("container log rotation is off: container_log_max_size is negative")
		return
	}
	t := time.NewTicker(m.opts.Interval)
	defer t.Stop()
	for {
		m.Cycle(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// Cycle checks every running container's log once, Workers at a time.
func (m *Manager) Cycle(ctx context.Context) {
	containers, err := m.opts.Runtime.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
	})
	if err != nil {
		m.log.Warn("container log rotation skipped this cycle: cannot list containers", "error", err)
		return
	}
	ids := make(chan string)
	var wg sync.WaitGroup
	for range m.opts.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ids {
				m.check(ctx, id)
			}
		}()
	}
	for _, c := range containers {
		ids <- c.GetId()
	}
	close(ids)
	wg.Wait()
}

// check rotates one container's log if it reached MaxSize. A log that
// is missing (removed by hand, or a rotation whose reopen failed) is
// reopened first, as upstream.
func (m *Manager) check(ctx context.Context, id string) {
	st, err := m.opts.Runtime.ContainerStatus(ctx, id, false)
	if err != nil || st.GetStatus() == nil {
		m.log.Debug("cannot read a container's status for log rotation", "container", id, "error", err)
		return
	}
	path := st.GetStatus().GetLogPath()
	if path == "" {
		return
	}
	info, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) {
		if err = m.opts.Runtime.ReopenContainerLog(ctx, id); err == nil {
			info, err = os.Stat(path)
		}
	}
	if err != nil {
		m.failures.Inc()
		m.log.Warn("cannot check a container's log for rotation", "container", id, "path", path, "error", err)
		return
	}
	if info.Size() < m.opts.MaxSize {
		return
	}
	if err := m.rotate(ctx, id, path); err != nil {
		m.failures.Inc()
		m.log.Warn("container log rotation failed", "container", id, "path", path, "size", info.Size(), "error", err)
		return
	}
	m.rotations.Inc()
	m.log.Debug("rotated a container log", "container", id, "path", path, "size", info.Size())
}

// rotate makes room for one more rotation, then renames the live log and
// has the runtime reopen it; if the runtime cannot, the log is renamed
// back so that the container keeps writing where readers look.
func (m *Manager) rotate(ctx context.Context, id, path string) error {
	rotated, err := rotations(path)
	if err != nil {
		return err
	}
	plan := PlanRotation(rotated, m.opts.MaxFiles)
	for _, f := range plan.Remove {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("removing old log: %w", err)
		}
	}
	for _, f := range plan.Compress {
		if err := compress(f); err != nil {
			return err
		}
	}
	next := path + "." + m.opts.Now().Format(timestampFormat)
	if err := os.Rename(path, next); err != nil {
		return fmt.Errorf("renaming the live log: %w", err)
	}
	if err := m.opts.Runtime.ReopenContainerLog(ctx, id); err != nil {
		if back := os.Rename(next, path); back != nil {
			m.log.Error("cannot rename a rotated log back after a failed reopen", "container", id, "path", next, "error", back)
		}
		return fmt.Errorf("reopening the container log: %w", err)
	}
	return nil
}
