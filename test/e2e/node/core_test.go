//go:build e2e

package nodee2e

import (
	"fmt"
	"net/http"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/microlet/microlet/internal/e2e"
)

// coreStopTimeout is how long a stopping core has before SIGKILL.
const coreStopTimeout = 30 * time.Second

// coreProcess is one run of the microlet binary.
type coreProcess struct {
	cmd *exec.Cmd
	// exited is closed once the process has exited and been reaped.
	exited chan struct{}
}

func (c *coreProcess) pid() int { return c.cmd.Process.Pid }

func (c *coreProcess) hasExited() bool {
	select {
	case <-c.exited:
		return true
	default:
		return false
	}
}

// startCore runs microlet on the node's config and waits until its healthz
// check passes; "" is every check: the runtime, PLEG, the sync loop and
// every plugin are up.
func (n *testNode) startCore(check string) {
	n.t.Helper()
	cmd := microletCommand("--config", n.configPath)
	cmd.Env = append(cmd.Env, n.env...)
	cmd.Stdout, cmd.Stderr = n.log, n.log
	if err := cmd.Start(); err != nil {
		n.t.Fatalf("starting microlet: %v", err)
	}
	c := &coreProcess{cmd: cmd, exited: make(chan struct{})}
	go func() {
		cmd.Wait()
		close(c.exited)
	}()
	n.core = c
	path := ""
	if check != "" {
		path = "/" + check
	}
	n.eventually("microlet passes /healthz"+path, func() (bool, string) {
		if c.hasExited() {
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
		n.t.Errorf("the core (pid %d) runs no plugin process before the kill", n.core.pid())
	}
	if err := n.core.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		n.t.Fatalf("SIGKILL the core: %v", err)
	}
	<-n.core.exited
	e2e.ExpectGone(n.t, plugins)
}

// stop ends the core for good after the test: SIGTERM, then SIGKILL if it
// does not exit in time. No plugin process of it may remain. On failure,
// or with -v, the core's log goes to the test log.
func (n *testNode) stop() {
	if c := n.core; c != nil && !c.hasExited() {
		plugins := n.pluginProcesses()
		c.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-c.exited:
		case <-time.After(coreStopTimeout):
			n.t.Errorf("microlet did not exit %v after SIGTERM; killing it", coreStopTimeout)
			c.cmd.Process.Signal(syscall.SIGKILL)
			<-c.exited
		}
		e2e.ExpectGone(n.t, plugins)
	}
	if n.t.Failed() || testing.Verbose() {
		n.t.Logf("microlet's log:\n%s", n.log.String())
	}
}
