//go:build e2e

package nodee2e

import (
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/microlet/microlet/internal/e2e"
)

// coreStopTimeout is how long a stopping core has before SIGKILL.
const coreStopTimeout = 30 * time.Second

// startCore runs microlet on the node's config and waits until its healthz
// check passes; "" is every check: the runtime, PLEG, the sync loop and
// every plugin are up.
func (n *testNode) startCore(check string) {
	n.t.Helper()
	cmd := microletCommand("--config", n.configPath)
	cmd.Env = append(cmd.Env, n.env...)
	cmd.Stdout, cmd.Stderr = n.log, n.log
	c, err := e2e.StartProcess(cmd)
	if err != nil {
		n.t.Fatalf("starting microlet: %v", err)
	}
	n.core = c
	path := ""
	if check != "" {
		path = "/" + check
	}
	n.eventually("microlet passes /healthz"+path, func() (bool, string) {
		if c.HasExited() {
			n.t.Fatalf("microlet exited while starting (%v)", cmd.ProcessState)
		}
		status, body := n.healthz(path)
		return status == http.StatusOK, fmt.Sprintf("healthz %d: %s", status, body)
	})
}

// microletCommand runs the microlet binary with args, in e2e.CoreEnv.
func microletCommand(args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(binDir, "microlet"), args...)
	cmd.Env = e2e.CoreEnv()
	return cmd
}

// killCore SIGKILLs the core, as a crash would, and checks that no plugin
// process it started is left.
func (n *testNode) killCore() {
	n.t.Helper()
	plugins := n.pluginProcesses()
	if len(plugins) == 0 {
		n.t.Errorf("the core (pid %d) runs no plugin process before the kill", n.core.PID())
	}
	if err := n.core.Kill(); err != nil {
		n.t.Fatalf("SIGKILL the core: %v", err)
	}
	e2e.ExpectGone(n.t, plugins)
}

// stop ends the core for good after the test: SIGTERM, then SIGKILL if it
// does not exit in time. No plugin process of it may remain. On failure,
// or with -v, the core's log goes to the test log.
func (n *testNode) stop() {
	if c := n.core; c != nil && !c.HasExited() {
		plugins := n.pluginProcesses()
		if !c.Stop(coreStopTimeout) {
			n.t.Errorf("microlet did not exit %v after SIGTERM; killing it", coreStopTimeout)
		}
		e2e.ExpectGone(n.t, plugins)
	}
	if n.t.Failed() || testing.Verbose() {
		n.t.Logf("microlet's log:\n%s", n.log.String())
	}
}
