package lastresort

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestMain(m *testing.M) { os.Exit(Main(m)) }

// reset empties the registry for a test that reads it whole.
func reset(t *testing.T) {
	registry.mu.Lock()
	registry.byID = nil
	registry.mu.Unlock()
	t.Cleanup(func() {
		registry.mu.Lock()
		registry.byID = nil
		registry.mu.Unlock()
	})
}

func TestMargin(t *testing.T) {
	for _, c := range []struct{ timeout, want time.Duration }{
		{10 * time.Minute, time.Minute},
		{25 * time.Minute, time.Minute},
		{4 * time.Minute, time.Minute},
		{2 * time.Minute, 30 * time.Second},
		{2 * time.Second, 500 * time.Millisecond},
	} {
		if got := Margin(c.timeout); got != c.want {
			t.Errorf("Margin(%v) = %v, want %v", c.timeout, got, c.want)
		}
	}
}

func TestFireRunsNewestFirstAndGoesOnPastFailures(t *testing.T) {
	reset(t)
	var order []string
	add := func(name string, err error) func() {
		return Register(name, func() error { order = append(order, name); return err })
	}
	add("first", nil)
	dropped := add("dropped", nil)
	add("failing", errors.New("boom"))
	Register("panicking", func() error { order = append(order, "panicking"); panic("kaput") })
	add("last", nil)
	dropped()
	dropped() // a second call does nothing

	var out bytes.Buffer
	fire(&out, time.Minute, 10*time.Second)
	if got, want := strings.Join(order, ","), "last,panicking,failing,first"; got != want {
		t.Errorf("teardowns ran as %s, want %s", got, want)
	}
	for _, want := range []string{
		Banner, "tearing down 4 resource(s)",
		"goroutine ", "TestFireRunsNewestFirstAndGoesOnPastFailures", // the dump
		"lastresort: tore down last", "lastresort: panicking: teardown failed", "kaput",
		"lastresort: failing: teardown failed", "boom", "lastresort: tore down first",
		"exiting with status 2",
	} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("the watchdog's output lacks %q:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "dropped") {
		t.Errorf("an unregistered teardown shows:\n%s", out.String())
	}
}

func TestFireBoundsAHangingTeardown(t *testing.T) {
	reset(t)
	ran := make(chan struct{})
	Register("after the hang", func() error { close(ran); return nil })
	release := make(chan struct{})
	defer close(release) // fire must return before, or the test hangs
	Register("hanging", func() error { <-release; return nil })

	var out bytes.Buffer
	fire(&out, 4*time.Second, time.Second)
	if !strings.Contains(out.String(), "lastresort: hanging: teardown still running after 500ms, going on") {
		t.Errorf("the hang is not reported:\n%s", out.String())
	}
	select {
	case <-ran:
	default:
		t.Errorf("the teardown after the hang did not run:\n%s", out.String())
	}
}

// childEnv makes this test binary, run again by TestWatchdogBeforeTimeout,
// the one that times out; it names the file its teardown writes.
const childEnv = "LASTRESORT_TEST_CHILD"

// readyEnv names a file the child writes once its teardown is registered.
const readyEnv = "LASTRESORT_TEST_READY"

// TestWatchdogChild is the child's test: it registers a teardown and
// blocks past the binary's timeout (or until it is interrupted).
func TestWatchdogChild(t *testing.T) {
	marker := os.Getenv(childEnv)
	if marker == "" {
		t.Skip("run by TestWatchdogBeforeTimeout")
	}
	Register("marker file", func() error { return os.WriteFile(marker, []byte("torn down"), 0o644) })
	if ready := os.Getenv(readyEnv); ready != "" {
		if err := os.WriteFile(ready, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(time.Hour)
}

// TestWatchdogBeforeTimeout runs this test binary with a 2 s timeout and a
// test that blocks: the watchdog, not the timeout's panic, must end it,
// with its message, a goroutine dump and the teardown done.
func TestWatchdogBeforeTimeout(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "marker")
	cmd := exec.Command(os.Args[0], "-test.run=^TestWatchdogChild$", "-test.timeout=2s")
	cmd.Env = append(os.Environ(), childEnv+"="+marker)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != ExitCode {
		t.Fatalf("the child ended with %v, want exit status %d; its output:\n%s", err, ExitCode, out)
	}
	for _, want := range []string{Banner, "-test.timeout=2s", "goroutine ", "lastresort.TestWatchdogChild", "tore down marker file"} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("the child's output lacks %q:\n%s", want, out)
		}
	}
	if bytes.Contains(out, []byte("panic: test timed out")) {
		t.Errorf("the timeout's panic came first:\n%s", out)
	}
	if data, err := os.ReadFile(marker); err != nil || string(data) != "torn down" {
		t.Errorf("the teardown did not run: %q, %v", data, err)
	}
}

// TestInterruptTearsDown interrupts a child binary whose test blocks, as
// Ctrl-C on `make test` does: the registered teardown must run, and the
// child exit with 130.
func TestInterruptTearsDown(t *testing.T) {
	marker := filepath.Join(t.TempDir(), "marker")
	cmd := exec.Command(os.Args[0], "-test.run=^TestWatchdogChild$", "-test.timeout=1h")
	cmd.Env = append(os.Environ(), childEnv+"="+marker, readyEnv+"="+marker+".ready")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := os.Stat(marker + ".ready"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("the child never registered its teardown; its output:\n%s", out.String())
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	err := cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 130 {
		t.Fatalf("the child ended with %v, want exit status 130; its output:\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "tore down marker file") {
		t.Errorf("the child's output does not say it tore down:\n%s", out.String())
	}
	if data, err := os.ReadFile(marker); err != nil || string(data) != "torn down" {
		t.Errorf("the teardown did not run: %q, %v", data, err)
	}
}
