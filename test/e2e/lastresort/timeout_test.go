//go:build e2e

// Package lastresorte2e proves internal/lastresort on real components: a
// test binary that runs out of time with a control plane, a devnode, a
// microlet core and a pod with a tmpfs volume up leaves none of them.
package lastresorte2e

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/microlet/microlet/internal/e2e"
	"github.com/microlet/microlet/internal/lastresort"
	"github.com/microlet/microlet/internal/prereq"
	pressuree2e "github.com/microlet/microlet/test/e2e/pressure"
)

func TestMain(m *testing.M) { os.Exit(pressuree2e.Main(m)) }

const (
	// reportEnv makes the test binary the child that times out, and names
	// the file where it lists what it started.
	reportEnv = "LASTRESORT_E2E_REPORT"
	// childTimeout is the child's -test.timeout: its watchdog fires at
	// three quarters of it (lastresort.Margin), which leaves the child
	// about 45 s to bring everything up on a loaded 2-core machine, and
	// 15 s to tear it down.
	childTimeout = time.Minute
)

// TestTimeoutTearsDown runs this test binary again as a child that starts
// a devcluster, a node (devnode, cgroup root, microlet core with its
// plugins) and a pod with a memory-backed emptyDir, lists every process,
// mount, network namespace, cgroup and directory of theirs, and then
// blocks past its -test.timeout. The child must end by the watchdog, with
// its message and a dump of every goroutine, and leave nothing behind.
func TestTimeoutTearsDown(t *testing.T) {
	if path := os.Getenv(reportEnv); path != "" {
		runChild(t, path)
		return
	}
	reportPath := e2e.ShortTempDir(t) + "/report.json"
	cmd := exec.Command(os.Args[0], "-test.run=^TestTimeoutTearsDown$", "-test.v", "-test.timeout="+childTimeout.String())
	// The binaries this run built or found; the child builds nothing.
	cmd.Env = append(os.Environ(), reportEnv+"="+reportPath, e2e.EnvDir+"="+pressuree2e.BinDir)
	start := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("the child ran %v", time.Since(start).Round(time.Second))
	if err == nil && strings.Contains(string(out), "--- SKIP") {
		prereq.Missing(t, "the child skipped:\n%s", out)
	}
	data, rerr := os.ReadFile(reportPath)
	if rerr != nil {
		t.Fatalf("the child listed nothing it started (%v); it ended with %v:\n%s", rerr, err, out)
	}
	var rep report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != lastresort.ExitCode {
		t.Errorf("the child ended with %v, want exit status %d", err, lastresort.ExitCode)
	}
	for _, want := range []string{
		lastresort.Banner,
		"goroutine ", "test/e2e/lastresort.runChild(", // the dump shows the blocked test
		"lastresort: tore down devcluster in " + rep.ClusterDir,
		"lastresort: tore down devnode",
		"lastresort: exiting with status",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the child's output lacks %q", want)
		}
	}
	if strings.Contains(string(out), "panic: test timed out") {
		t.Error("the timeout's panic came before the watchdog")
	}
	rep.checkGone(t)
	if t.Failed() {
		t.Logf("the child's output:\n%s", out)
		return
	}
	for _, line := range strings.Split(string(out), "\n") {
		if strings.Contains(line, "up and listed") || strings.HasPrefix(strings.TrimSpace(line), "lastresort: ") {
			t.Log("child: " + strings.TrimSpace(line))
		}
	}
}
