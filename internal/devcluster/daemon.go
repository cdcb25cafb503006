package devcluster

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/microlet/microlet/internal/lastresort"
)

// stopGrace is how long a daemon has to exit after SIGTERM.
const stopGrace = 10 * time.Second

// daemon is etcd or the API server: a child in a process group of its own
// (a Ctrl-C of the test does not reach it before the cleanup) that dies
// with the test binary (internal/lastresort), its output in a log file.
type daemon struct {
	name    string
	cmd     *exec.Cmd
	logPath string
	exited  chan struct{}
}

// A daemon started again (StartAPIServer) appends to the log of the one
// before.
func startDaemon(logPath, bin string, args ...string) (*daemon, error) {
	log, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, err
	}
	defer log.Close() // the child has its own copy
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = log, log
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := lastresort.StartCommand(cmd); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	d := &daemon{name: bin, cmd: cmd, logPath: logPath, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(d.exited)
	}()
	return d, nil
}

// waitFor polls url until it answers 200, the daemon exits or ctx ends.
func (d *daemon) waitFor(ctx context.Context, what, url string, client *http.Client) error {
	var last string
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		if resp, err := client.Do(req); err != nil {
			last = err.Error()
		} else {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
			last = resp.Status
		}
		select {
		case <-d.exited:
			return fmt.Errorf("%s exited while starting (%v); its log:\n%s", what, d.cmd.ProcessState, d.logTail())
		case <-ctx.Done():
			return fmt.Errorf("%s did not get ready (%s: %s); its log:\n%s", what, url, last, d.logTail())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// stop ends the daemon by its PID: SIGTERM, then SIGKILL after stopGrace.
func (d *daemon) stop() error {
	select {
	case <-d.exited:
		return nil
	default:
	}
	pid := d.cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("stop %s (pid %d): %w", d.name, pid, err)
	}
	select {
	case <-d.exited:
		return nil
	case <-time.After(stopGrace):
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill %s (pid %d): %w", d.name, pid, err)
	}
	select {
	case <-d.exited:
		return nil
	case <-time.After(stopGrace):
		return fmt.Errorf("%s (pid %d) still runs %s after SIGKILL", d.name, pid, stopGrace)
	}
}

// logTail is the end of the daemon's log (30 lines), for errors.
func (d *daemon) logTail() string {
	data, err := os.ReadFile(d.logPath)
	if err != nil {
		return err.Error()
	}
	lines := strings.Split(strings.TrimRight(string(data), "\n"), "\n")
	return strings.Join(lines[max(len(lines)-30, 0):], "\n")
}
