package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"

	"github.com/hashicorp/go-hclog"
	"github.com/hashicorp/go-plugin/runner"
	"golang.org/x/sys/unix"

	"github.com/microlet/microlet/internal/forkthread"
)

// processRunner is the go-plugin runner of one plugin process. Unlike
// go-plugin's own, it execs the verified binary's descriptor, puts the
// plugin in a process group of its own with a parent-death signal, kills
// the whole group, and names itself after the plugin, so that go-plugin logs
// the plugin's stderr as plugin.<kind>.<name>.
type processRunner struct {
	name   string
	binary *verifiedBinary
	cmd    *exec.Cmd
	stdout io.ReadCloser
	stderr io.ReadCloser
	logger hclog.Logger

	// exited is closed when the plugin process has exited and been reaped.
	exited  chan struct{}
	mu      sync.Mutex
	pid     int
	reaped  bool             // set just before reaping: the pid may name another process after
	state   *os.ProcessState // set once reaped
	waitErr error            // as exec.Cmd.Wait would return it
}

var _ runner.Runner = (*processRunner)(nil)

// newProcessRunner builds the command for a verified binary. template is the
// command go-plugin prepared; only its environment (the handshake variables)
// is used. env is the rest of the plugin's environment.
func newProcessRunner(logger hclog.Logger, template *exec.Cmd, bin *verifiedBinary, name string, args, env []string) (*processRunner, error) {
	cmd := &exec.Cmd{
		Path: bin.execPath(),
		Args: append([]string{bin.name}, args...),
		Env:  slices.Concat(env, template.Env),
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:   true,
			Pdeathsig: syscall.SIGKILL,
		},
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return nil, err
	}
	return &processRunner{
		name:   name,
		binary: bin,
		cmd:    cmd,
		stdout: stdout,
		stderr: stderr,
		logger: logger,
		exited: make(chan struct{}),
	}, nil
}

func (r *processRunner) Start(context.Context) error {
	err := forkthread.Do(r.cmd.Start) // Pdeathsig follows the forking thread
	// The child has exec'd (or failed to): the descriptor is no longer needed.
	r.binary.Close()
	if errors.Is(err, syscall.ETXTBSY) {
		return fmt.Errorf("start plugin %s: the file is open for writing; replace plugin binaries by rename (install, mv): %w", r.binary.path, err)
	}
	if err != nil {
		return fmt.Errorf("start plugin %s: %w", r.binary.path, err)
	}
	r.mu.Lock()
	r.pid = r.cmd.Process.Pid
	r.mu.Unlock()
	r.logger.Debug("plugin started", "path", r.binary.path, "pid", r.pid)
	go r.watchLeader()
	return nil
}

// watchLeader waits for the plugin process to exit, kills what is left of
// its group (its own children, which would otherwise outlive it and hold its
// stderr open) while its pid still names the group, then reaps it. Exit is
// known here at once, whatever holds the pipes: go-plugin's own signal (the
// connection's Done) waits for the pipes to close first.
func (r *processRunner) watchLeader() {
	for {
		var info unix.Siginfo
		err := unix.Waitid(unix.P_PID, r.pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if !errors.Is(err, unix.EINTR) {
			break
		}
	}
	r.killGroup()
	r.mu.Lock()
	r.reaped = true
	r.mu.Unlock()
	state, err := r.cmd.Process.Wait()
	if err == nil && !state.Success() {
		err = &exec.ExitError{ProcessState: state}
	}
	r.mu.Lock()
	r.state, r.waitErr = state, err
	r.mu.Unlock()
	close(r.exited)
}

// Wait returns once the plugin process has exited and been reaped. go-plugin
// calls it after reading stdout and stderr to the end; it closes them, as
// exec.Cmd.Wait would.
func (r *processRunner) Wait(context.Context) error {
	<-r.exited
	r.stdout.Close()
	r.stderr.Close()
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.waitErr
}

// Kill sends SIGKILL to the plugin's whole process group.
func (r *processRunner) Kill(context.Context) error {
	return r.killGroup()
}

func (r *processRunner) killGroup() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pid == 0 || r.reaped {
		return nil
	}
	if err := syscall.Kill(-r.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill plugin process group %d: %w", r.pid, err)
	}
	return nil
}

// openExecutable opens the file the process runs, even if it was replaced or
// removed since; it fails once the process is reaped, when its pid may name
// another process.
func (r *processRunner) openExecutable() (*os.File, error) {
	alive := func() bool {
		r.mu.Lock()
		defer r.mu.Unlock()
		return r.pid != 0 && !r.reaped
	}
	if !alive() {
		return nil, fmt.Errorf("plugin process %d has exited", r.pid)
	}
	f, err := os.Open(fmt.Sprintf("/proc/%d/exe", r.pid))
	if err == nil && !alive() {
		f.Close()
		err = fmt.Errorf("plugin process %d has exited", r.pid)
	}
	return f, err
}

// exitStatus describes how the process ended; empty while it runs.
func (r *processRunner) exitStatus() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.state == nil {
		return ""
	}
	return r.state.String()
}

func (r *processRunner) Stdout() io.ReadCloser { return r.stdout }
func (r *processRunner) Stderr() io.ReadCloser { return r.stderr }

// Name is the plugin's name: go-plugin names the stderr logger after it.
func (r *processRunner) Name() string { return r.name }

func (r *processRunner) ID() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pid == 0 {
		return "" // not started: go-plugin's Kill then has nothing to do
	}
	return strconv.Itoa(r.pid)
}

func (r *processRunner) Diagnose(context.Context) string {
	return fmt.Sprintf("plugin %s did not complete the go-plugin handshake: it must print nothing to stdout before "+
		"serving (build it with the microlet SDK's sdk.Serve), be built for %s/%s, and be linked statically or "+
		"find its shared libraries", r.binary.path, runtime.GOOS, runtime.GOARCH)
}

func (r *processRunner) PluginToHost(network, addr string) (string, string, error) {
	return network, addr, nil
}

func (r *processRunner) HostToPlugin(network, addr string) (string, string, error) {
	return network, addr, nil
}
