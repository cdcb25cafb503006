package devnode

import (
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"syscall"
	"time"

	"github.com/prometheus/procfs"

	"github.com/microlet/microlet/internal/lastresort"
)

// process is a daemon the node runs (containerd, a kubelet), or one it found
// running from an earlier process: exited is closed once it is gone.
type process struct {
	pid    int
	exited <-chan struct{}
}

// startProcess starts cmd in a process group of its own, so that a Ctrl-C
// meant for the parent does not reach it before the parent cleans up in
// order, and with a parent-death signal (internal/lastresort), so that a
// test binary killed outright takes it along.
func startProcess(cmd *exec.Cmd) (process, error) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := lastresort.StartCommand(cmd); err != nil {
		return process{}, err
	}
	exited := make(chan struct{})
	go func() {
		cmd.Wait()
		close(exited)
	}()
	return process{pid: cmd.Process.Pid, exited: exited}, nil
}

// adoptProcess watches a process that is not a child of this one.
func adoptProcess(pid int) process {
	exited := make(chan struct{})
	start, err := processStart(pid)
	if err != nil {
		close(exited)
		return process{pid: pid, exited: exited}
	}
	go func() {
		defer close(exited)
		for {
			if s, err := processStart(pid); err != nil || s != start {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	return process{pid: pid, exited: exited}
}

func (p process) running() bool {
	if p.exited == nil {
		return false
	}
	select {
	case <-p.exited:
		return false
	default:
		return true
	}
}

// stop sends SIGTERM, and SIGKILL if the process is still there after grace.
func (p process) stop(grace time.Duration) error {
	if !p.running() {
		return nil
	}
	if err := syscall.Kill(p.pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("signal pid %d: %w", p.pid, err)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(grace):
	}
	return p.kill()
}

// kill sends SIGKILL and waits for the process to be gone.
func (p process) kill() error {
	if !p.running() {
		return nil
	}
	if err := syscall.Kill(p.pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill pid %d: %w", p.pid, err)
	}
	select {
	case <-p.exited:
		return nil
	case <-time.After(10 * time.Second):
		return fmt.Errorf("pid %d still runs 10s after SIGKILL", p.pid)
	}
}

// processStart returns the start time of a live process, in clock ticks
// since boot: with the PID it names one process for good. A zombie counts
// as gone.
func processStart(pid int) (uint64, error) {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0, err
	}
	stat, err := p.Stat()
	if err != nil {
		return 0, err
	}
	if stat.State == "Z" {
		return 0, fmt.Errorf("pid %d is a zombie", pid)
	}
	return stat.Starttime, nil
}

// processesWithArg returns the live processes whose command line holds
// flag immediately followed by value, e.g. a shim's "-address SOCKET".
func processesWithArg(flag, value string) ([]int, error) {
	procs, err := procfs.AllProcs()
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, p := range procs {
		args, err := p.CmdLine()
		if err != nil {
			continue // gone meanwhile
		}
		if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) && args[i+1] == value {
			pids = append(pids, p.PID)
		}
	}
	return pids, nil
}

// processHasArg reports whether pid is alive and has arg in its command line.
func processHasArg(pid int, arg string) bool {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return false
	}
	args, err := p.CmdLine()
	return err == nil && slices.Contains(args, arg)
}
