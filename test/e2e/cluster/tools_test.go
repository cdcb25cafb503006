//go:build e2e

package clustere2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/microlet/microlet/internal/devnode"
	"github.com/microlet/microlet/internal/e2e"
	"github.com/microlet/microlet/internal/prereq"
)

// clusterTool is the path of one of the cluster's own tools that
// hack/tools/build.sh builds into the kube tools directory (metrics-server,
// promtool, crictl); without it the test skips, or fails under CI.
func clusterTool(t testing.TB, name string) string {
	t.Helper()
	dir, err := devnode.KubeToolsDir()
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if _, err := os.Stat(path); err != nil {
		prereq.Missing(t, "no %s in %s; build it with `make kube-tools` (hack/tools/build.sh)", name, dir)
	}
	return path
}

// runTool runs a cluster tool to completion and returns its standard
// output and standard error; a failure to start or a non-zero exit is in err.
func runTool(t testing.TB, bin string, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err = cmd.Run()
	if err != nil {
		err = fmt.Errorf("%s %s: %w", filepath.Base(bin), strings.Join(args, " "), err)
	}
	return out.String(), errOut.String(), err
}

// daemon is a long-running tool started for one test.
type daemon struct {
	cmd *exec.Cmd
	log *e2e.SyncBuffer
	// exited is closed once the process has been reaped.
	exited <-chan struct{}
}

// startDaemon starts bin in the background; when t ends it is stopped by
// its pid (SIGTERM, SIGKILL after 10 s), and its output goes to the test's
// log if t failed.
func startDaemon(t testing.TB, bin string, args ...string) *daemon {
	t.Helper()
	d := &daemon{cmd: exec.Command(bin, args...), log: &e2e.SyncBuffer{}}
	d.cmd.Stdout, d.cmd.Stderr = d.log, d.log
	p, err := e2e.StartProcess(d.cmd)
	if err != nil {
		t.Fatalf("starting %s: %v", filepath.Base(bin), err)
	}
	d.exited = p.Exited()
	t.Cleanup(func() {
		_ = d.cmd.Process.Signal(syscall.SIGTERM)
		select {
		case <-d.exited:
		case <-time.After(10 * time.Second):
			_ = d.cmd.Process.Kill()
			<-d.exited
		}
		if t.Failed() {
			t.Logf("%s's log:\n%s", filepath.Base(bin), d.log.String())
		}
	})
	return d
}

// running says whether the daemon is still running, and if not, why.
func (d *daemon) running() error {
	select {
	case <-d.exited:
		return errors.New(d.cmd.ProcessState.String() + "\n" + d.log.String())
	default:
		return nil
	}
}

// kubectlOutput runs kubectl as the cluster's admin like kubectl, but
// returns its standard output and error apart, and its failure, for a
// caller that retries.
func kubectlOutput(t testing.TB, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	line := kubectlArgs(t, args...)
	return runTool(t, line[0], line[1:]...)
}
