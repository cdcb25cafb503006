package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/microlet/microlet/internal/lastresort"
)

// ChildProcesses lists the live children of parent (a core's plugins) from
// /proc, by their argv[0]: the plugin host execs a descriptor, so comm is
// no name.
func ChildProcesses(parent int) (map[int]string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	out := map[int]string{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		ppid, state, ok := procStat(pid)
		if !ok || ppid != parent || exited(state) {
			continue
		}
		cmdline, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil {
			continue // exited meanwhile
		}
		argv0, _, _ := bytes.Cut(cmdline, []byte{0})
		out[pid] = filepath.Base(string(argv0))
	}
	return out, nil
}

// ProcessGone says whether pid has exited: no such process, or a zombie
// nobody reaped yet.
func ProcessGone(pid int) bool {
	_, state, ok := procStat(pid)
	return !ok || exited(state)
}

func exited(state string) bool { return state == "Z" || state == "X" }

// ProcessStopped says whether every thread of pid is stopped (SIGSTOP):
// kill returns before the signal has stopped them, and a thread still
// running can answer a request sent meanwhile.
func ProcessStopped(pid int) bool {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(tasks) == 0 {
		return false
	}
	for _, task := range tasks {
		_, state, ok := statFile(fmt.Sprintf("/proc/%d/task/%s/stat", pid, task.Name()))
		if !ok || state != "T" {
			return false
		}
	}
	return true
}

// procStat reads a process's parent pid and state from /proc/<pid>/stat.
func procStat(pid int) (ppid int, state string, ok bool) {
	return statFile(fmt.Sprintf("/proc/%d/stat", pid))
}

// statFile reads the parent pid and state from a /proc stat file.
func statFile(path string) (ppid int, state string, ok bool) {
	stat, err := os.ReadFile(path)
	if err != nil {
		return 0, "", false
	}
	// pid (comm) state ppid ...; comm may hold spaces and parentheses.
	fields := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(fields) < 2 {
		return 0, "", false
	}
	ppid, err = strconv.Atoi(fields[1])
	return ppid, fields[0], err == nil
}

// ExpectGone fails the test unless every process in procs (pid -> name)
// exits soon, and kills one that does not. Plugins die with their core
// (parent-death signal), so soon is seconds.
func ExpectGone(t testing.TB, procs map[int]string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for pid, name := range procs {
		for !ProcessGone(pid) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if !ProcessGone(pid) {
			t.Errorf("plugin process %s (pid %d) outlived its core; killing it", name, pid)
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// Process is a started command that is reaped once it exits: a core, a
// device plugin.
type Process struct {
	Cmd    *exec.Cmd
	exited chan struct{}
}

// StartProcess starts cmd and reaps it once it exits. Until then the
// lastresort watchdog SIGKILLs it if the test binary is about to time
// out, and it dies with the test binary (a parent-death signal).
func StartProcess(cmd *exec.Cmd) (*Process, error) {
	if err := lastresort.StartCommand(cmd); err != nil {
		return nil, err
	}
	p := &Process{Cmd: cmd, exited: make(chan struct{})}
	unregister := lastresort.Register(fmt.Sprintf("process %s (pid %d)", filepath.Base(cmd.Path), p.PID()), p.Kill)
	go func() {
		_ = cmd.Wait()
		close(p.exited)
		unregister()
	}()
	return p, nil
}

// PID is the process's id.
func (p *Process) PID() int { return p.Cmd.Process.Pid }

// Exited is closed once the process has exited and been reaped; then
// Cmd.ProcessState says how it ended.
func (p *Process) Exited() <-chan struct{} { return p.exited }

// HasExited says whether the process has exited and been reaped.
func (p *Process) HasExited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Kill SIGKILLs the process, as a crash would, and waits until it has
// exited.
func (p *Process) Kill() error {
	if err := p.Cmd.Process.Signal(syscall.SIGKILL); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	<-p.exited
	return nil
}

// Stop SIGTERMs the process and waits until it exits. If it has not
// after timeout, Stop SIGKILLs it, waits for that, and returns false.
func (p *Process) Stop(timeout time.Duration) bool {
	_ = p.Cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.exited:
		return true
	case <-time.After(timeout):
		_ = p.Cmd.Process.Signal(syscall.SIGKILL)
		<-p.exited
		return false
	}
}
