//go:build e2e

package pluginhoste2e

import (
	"context"
	"errors"
	"fmt"
	"io"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"golang.org/x/sys/unix"

	"github.com/microlet/microlet/core/pluginhost"
	"github.com/microlet/microlet/internal/e2e"
)

func TestKilledPluginIsRestarted(t *testing.T) {
	host, _ := serving(t, pluginhost.Options{}, evictionAlpha)
	slot := host.Plugin("eviction")
	old := mustStatus(t, host, "eviction", "alpha").PID

	loop := startCallLoop(slot, time.Millisecond)
	loop.waitOK(t, 20)
	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	st := servedByAnotherProcess(t, host, "eviction", old)
	loop.waitOK(t, 20)
	failures, _ := loop.end()

	for _, err := range failures {
		if !errors.Is(err, pluginhost.ErrUnavailable) {
			t.Errorf("a call during the outage failed with %v; want ErrUnavailable", err)
		}
	}
	t.Logf("%d calls failed during the outage", len(failures))
	if st.Restarts != 1 {
		t.Errorf("restarts = %d, want 1", st.Restarts)
	}
	if !e2e.ProcessGone(old) {
		t.Errorf("killed pid %d is still there", old)
	}
}

func TestPluginChildrenDieWithIt(t *testing.T) {
	var out e2e.SyncBuffer
	spec := evictionAlpha
	spec.Args = []string{"-spawn-child"}
	logger := hclog.New(&hclog.LoggerOptions{Level: hclog.Info, Output: io.MultiWriter(&out, LogWriter{t})})
	host, _ := serving(t, pluginhost.Options{Logger: logger}, spec)
	old := mustStatus(t, host, "eviction", "alpha").PID
	var child int
	Eventually(t, 5*time.Second, "the plugin logged its child's pid", func() bool {
		m := regexp.MustCompile(`spawned child: .*child_pid=(\d+)`).FindStringSubmatch(out.String())
		if m != nil {
			child, _ = strconv.Atoi(m[1])
		}
		return child > 0
	})
	t.Cleanup(func() {
		if !e2e.ProcessGone(child) {
			syscall.Kill(child, syscall.SIGKILL)
		}
	})

	if err := syscall.Kill(old, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	servedByAnotherProcess(t, host, "eviction", old)
	Eventually(t, 5*time.Second, fmt.Sprintf("child %d of the killed plugin is gone", child), func() bool { return e2e.ProcessGone(child) })
}

func TestHungPluginIsKilledAndReplaced(t *testing.T) {
	var seen events
	host, _ := serving(t, pluginhost.Options{OnEvent: seen.record}, evictionAlpha)
	old := mustStatus(t, host, "eviction", "alpha").PID

	if err := syscall.Kill(old, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	servedByAnotherProcess(t, host, "eviction", old)
	if _, err := GetIdentity(context.Background(), host.Plugin("eviction")); err != nil {
		t.Errorf("call to the new process: %v", err)
	}
	if hung, ok := seen.last(pluginhost.EventHung); !ok || hung.PID != old {
		t.Errorf("hung event = %+v (found %v), want one for pid %d", hung, ok, old)
	}
	Eventually(t, 5*time.Second, fmt.Sprintf("stopped pid %d is gone", old), func() bool { return e2e.ProcessGone(old) })
}

// TestHungPluginFoundByACallIsKilled: with health checks an hour apart, a
// call that runs out of time has the process checked at once, so a hung
// plugin that is being used is replaced within seconds, not a period.
func TestHungPluginFoundByACallIsKilled(t *testing.T) {
	var seen events
	host, _ := serving(t, pluginhost.Options{OnEvent: seen.record, HealthInterval: time.Hour, CallTimeout: 200 * time.Millisecond}, evictionAlpha)
	old := mustStatus(t, host, "eviction", "alpha").PID

	if err := syscall.Kill(old, syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	Eventually(t, 5*time.Second, fmt.Sprintf("pid %d stopped", old), func() bool { return e2e.ProcessStopped(old) })
	if _, err := GetIdentity(context.Background(), host.Plugin("eviction")); err == nil {
		t.Fatal("a call to a stopped plugin succeeded")
	}
	servedByAnotherProcess(t, host, "eviction", old)
	if hung, ok := seen.last(pluginhost.EventHung); !ok || hung.PID != old {
		t.Errorf("hung event = %+v (found %v), want one for pid %d", hung, ok, old)
	}
	Eventually(t, 5*time.Second, fmt.Sprintf("stopped pid %d is gone", old), func() bool { return e2e.ProcessGone(old) })
}

func TestKilledCoreLeavesNoPlugin(t *testing.T) {
	// Become the subreaper of the core's orphans, to learn how they died:
	// by the parent-death signal (SIGKILL at once), not by the SDK's own
	// orphan check (exit status 2 within a second), which backs it up.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })

	dir := PluginDir(t)
	plugins := []string{"eviction/alpha", "devices/gpu-a", "devices/gpu-b"}
	for _, p := range plugins {
		Install(t, bins.Plugin, dir, "microlet-"+strings.Replace(p, "/", "-", 1))
	}
	core := StartCore(t, bins.Core, dir, plugins...)
	if len(core.Plugins) != len(plugins) {
		t.Fatalf("testcore started %v, want %v", core.Plugins, plugins)
	}
	if err := core.Cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	core.Cmd.Wait()
	for name, pid := range core.Plugins {
		var ws unix.WaitStatus
		Eventually(t, 3*time.Second, fmt.Sprintf("plugin %s (pid %d) is gone after the core was killed", name, pid), func() bool {
			reaped, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
			return reaped == pid || err != nil
		})
		switch {
		case ws.Signaled() && ws.Signal() == unix.SIGKILL:
		case ws.Signaled():
			t.Errorf("plugin %s (pid %d) died of %s, want SIGKILL (its parent-death signal)", name, pid, ws.Signal())
		default:
			t.Errorf("plugin %s (pid %d) exited with status %d, want killed by SIGKILL (its parent-death signal)", name, pid, ws.ExitStatus())
		}
	}
}

func TestRestartBudgetEndsFailed(t *testing.T) {
	const budget = 3
	var seen events
	spec := evictionAlpha
	// Long enough after Configure that each launch completes even on a
	// loaded machine, so that every launch counts as one.
	spec.Args = []string{"-exit-after-configure=500ms"}
	host, _ := serving(t, pluginhost.Options{
		RestartBudget:     budget,
		RestartBackoff:    20 * time.Millisecond,
		RestartBackoffMax: 100 * time.Millisecond,
		OnEvent:           seen.record,
	}, spec)
	slot := host.Plugin("eviction")
	Eventually(t, 10*time.Second, "the slot is failed", func() bool { return slot.State() == pluginhost.Failed })

	launches := seen.count(pluginhost.EventStarted) + seen.count(pluginhost.EventRestarted)
	if launches != budget+1 {
		t.Errorf("%d launches, want RestartBudget+1 = %d", launches, budget+1)
	}
	if _, err := GetIdentity(context.Background(), slot); !errors.Is(err, pluginhost.ErrUnavailable) {
		t.Errorf("call to a failed slot: %v, want ErrUnavailable", err)
	}
	time.Sleep(300 * time.Millisecond) // longer than any backoff: nothing may start again
	if st := slot.Status(); st.State != pluginhost.Failed || st.PID != 0 {
		t.Errorf("a failed slot changed by itself: %+v", st)
	}
	if !strings.Contains(slot.Status().LastError, "more than 3 restarts") {
		t.Errorf("last error %q does not say the budget is spent", slot.Status().LastError)
	}
}
