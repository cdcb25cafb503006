//go:build e2e

package nodee2e

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// expectGone fails the test unless every process in procs exits soon.
// Plugins die with the core (parent-death signal), so soon is seconds.
func (n *testNode) expectGone(procs map[int]string) {
	n.t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for pid, name := range procs {
		for !processGone(pid) && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if !processGone(pid) {
			n.t.Errorf("plugin process %s (pid %d) outlived its core; killing it", name, pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
}

// pluginProcesses are the core's children (its plugins): pid -> program name.
func (n *testNode) pluginProcesses() map[int]string {
	n.t.Helper()
	procs, err := childProcesses(n.core.pid())
	if err != nil {
		n.t.Fatal(err)
	}
	return procs
}

// pluginPID is the pid of the core's process running microlet-<kind>-<name>, 0 if none.
func (n *testNode) pluginPID(kind, name string) int {
	n.t.Helper()
	for pid, prog := range n.pluginProcesses() {
		if prog == "microlet-"+kind+"-"+name {
			return pid
		}
	}
	return 0
}

// childProcesses lists the live children of parent from /proc, by their
// argv[0] (the plugin host execs a descriptor, so comm is no name).
func childProcesses(parent int) (map[int]string, error) {
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
		if !ok || ppid != parent || state == "Z" || state == "X" {
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

// procStat reads a process's parent pid and state from /proc/<pid>/stat.
func procStat(pid int) (ppid int, state string, ok bool) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
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

// processGone says whether pid has exited (a zombie nobody reaped counts).
func processGone(pid int) bool {
	_, state, ok := procStat(pid)
	return !ok || state == "Z" || state == "X"
}
