//go:build e2e

package nodee2e

import (
	"github.com/microlet/microlet/internal/e2e"
)

// pluginProcesses are the core's children (its plugins): pid -> program name.
func (n *testNode) pluginProcesses() map[int]string {
	n.t.Helper()
	procs, err := e2e.ChildProcesses(n.core.PID())
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
