package oomwatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sys/unix"

	"github.com/microlet/microlet/internal/promreg"
)

// KernelLog is the kernel's log device.
const KernelLog = "/dev/kmsg"

// Options configure a Watcher.
type Options struct {
	// Path is the kernel log device; "" is KernelLog.
	Path string
	// OnSystemOOM is called for each system OOM kill (the node out of
	// memory), from the watcher's goroutine: the node's SystemOOM event.
	OnSystemOOM func(victim OOMInstance)
	Logger      hclog.Logger
	Registerer  prometheus.Registerer
}

// Watcher follows the kernel log for OOM kills.
type Watcher struct {
	opts  Options
	log   hclog.Logger
	kills *prometheus.CounterVec
	dev   *os.File
	boot  time.Time
}

// New opens the kernel log at its end: kills from before the start were
// reported by the previous run, or by nobody, and would otherwise come
// again on every restart. Reading it needs root (kernel.dmesg_restrict).
func New(opts Options) (*Watcher, error) {
	if opts.Path == "" {
		opts.Path = KernelLog
	}
	dev, err := os.Open(opts.Path)
	if err != nil {
		return nil, fmt.Errorf("opening the kernel log: %w", err)
	}
	if _, err := dev.Seek(0, io.SeekEnd); err != nil {
		dev.Close()
		return nil, fmt.Errorf("seeking to the kernel log's end: %w", err)
	}
	w, err := newWatcher(dev, opts)
	if err != nil {
		dev.Close()
		return nil, err
	}
	return w, nil
}

// newWatcher reads kernel log records from dev, one a read.
func newWatcher(dev *os.File, opts Options) (*Watcher, error) {
	if opts.Logger == nil {
		opts.Logger = hclog.NewNullLogger()
	}
	var now unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &now); err != nil {
		return nil, fmt.Errorf("reading the monotonic clock: %w", err)
	}
	w := &Watcher{opts: opts, log: opts.Logger, dev: dev,
		// Kernel log timestamps count from boot on the monotonic clock.
		boot: time.Now().Add(-time.Duration(now.Nano())),
		kills: prometheus.NewCounterVec(prometheus.CounterOpts{
			Subsystem: "microlet", Name: "oom_kills_total",
			Help: "Processes the kernel's OOM killer killed, by scope: system (the node ran out of memory) or cgroup (a memory limit).",
		}, []string{"scope"}),
	}
	if err := promreg.Register(opts.Registerer, w.kills); err != nil {
		return nil, err
	}
	return w, nil
}

// Run reads kills until ctx ends or the kernel log fails.
func (w *Watcher) Run(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() { w.dev.Close() })
	defer stop()
	var p parser
	// A record is at most 8 KiB (the kernel's CONSOLE_EXT_LOG_MAX); a
	// shorter buffer fails the read.
	buf := make([]byte, 8192)
	for {
		n, err := w.dev.Read(buf)
		if errors.Is(err, syscall.EPIPE) {
			continue // records were overwritten before we read them
		}
		if err != nil {
			if ctx.Err() == nil {
				w.log.Error("reading the kernel log stopped; OOM kills are no longer reported", "error", err)
			}
			return
		}
		msg, at, ok := record(buf[:n], w.boot)
		if !ok {
			continue
		}
		if kill, ok := p.line(msg, at); ok {
			w.report(kill)
		}
	}
}

func (w *Watcher) report(kill OOMInstance) {
	scope := "cgroup"
	if kill.System() {
		scope = "system"
	}
	w.kills.WithLabelValues(scope).Inc()
	w.log.Warn("the kernel's OOM killer killed a process", "scope", scope, "pid", kill.PID, "process", kill.ProcessName,
		"cgroup", kill.TaskCgroup, "limit_of", kill.OOMCgroup, "constraint", kill.Constraint, "time", kill.Time.UTC().Format(time.RFC3339Nano))
	if kill.System() && w.opts.OnSystemOOM != nil {
		w.opts.OnSystemOOM(kill)
	}
}
