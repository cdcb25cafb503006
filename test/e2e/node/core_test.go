//go:build e2e

package nodee2e

import (
	"bytes"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
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

// microletCommand runs the microlet binary with args. Its environment is
// the test's without MICROLET_ variables: microlet reads those as config
// keys and refuses unknown ones, and the test's own (MICROLET_BIN,
// MICROLET_DEVNODE_CACHE) are not config.
func microletCommand(args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(binDir, "microlet"), args...)
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MICROLET_") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
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
	n.expectGone(plugins)
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
		n.expectGone(plugins)
	}
	if n.t.Failed() || testing.Verbose() {
		n.t.Logf("microlet's log:\n%s", n.log.String())
	}
}

// syncBuffer is a log sink safe for concurrent writers.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
