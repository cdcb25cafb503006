//go:build e2e

package nodee2e

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/internal/privatebus"
)

// shutdownPod is a pod whose TERM handler writes <dir>/<name> ("after"
// when <dir>/<waitFor> exists then, else "before"), then exits, or, with
// ignoreTerm, sleeps on until it is killed.
func shutdownPod(name, dir, waitFor string, priority string, ignoreTerm bool) string {
	exit := "exit 0"
	if ignoreTerm {
		exit = "true"
	}
	return `apiVersion: v1
kind: Pod
metadata:
  name: ` + name + `
spec:
  terminationGracePeriodSeconds: 600
` + priority + `  containers:
  - name: app
    image: IMAGE
    command: ["sh", "-c", "trap 'if [ -e /shared/` + waitFor + ` ]; then echo after; else echo before; fi > /shared/` + name + `; ` + exit + `' TERM; while true; do sleep 1; done"]
    volumeMounts: [{name: shared, mountPath: /shared}]
  volumes:
  - name: shared
    hostPath: {path: ` + dir + `}
`
}

// TestGracefulNodeShutdown: with shutdown_grace_period 6s, 3s of it for
// critical pods, microlet takes a logind delay inhibitor lock and, on
// PrepareForShutdown(true), refuses new pods, stops the ordinary pod
// first (its TERM ignored: killed when the group's 3s end, not its own
// 600s), then the critical one (priority system-node-critical), marks
// both as upstream, and releases the lock, which logind sees before its
// delay ends. This machine has no systemd: logind is the stand-in of
// internal/privatebus on a private dbus-daemon, which microlet finds
// through DBUS_SYSTEM_BUS_ADDRESS.
func TestGracefulNodeShutdown(t *testing.T) {
	t.Parallel()
	bus := privatebus.Start(t)
	// logind's delay covers the 6s: microlet writes no drop-in into this
	// machine's /etc (the override is tested in core/node/shutdown).
	logind := privatebus.StartLogind(t, bus, privatebus.LogindOptions{Delay: time.Minute, ConfDir: t.TempDir()})
	n := startNode(t, nodeOptions{
		env:      []string{"DBUS_SYSTEM_BUS_ADDRESS=" + bus.Address},
		settings: []string{`shutdown_grace_period = "6s"`, `shutdown_grace_period_critical_pods = "3s"`},
	})
	logind.Expect("inhibit shutdown kubelet delay Kubelet needs time to handle node shutdown", waitTimeout)
	logind.Expect("held 1", waitTimeout)

	dir := n.hostPath("shutdown")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	n.writeManifest("ordinary.yaml", shutdownPod("ordinary", dir, "none", "", true))
	n.writeManifest("critical.yaml", shutdownPod("critical", dir, "ordinary", "  priorityClassName: system-node-critical\n  priority: 2000001000\n", false))
	for _, name := range []string{"ordinary", "critical"} {
		n.waitPod(name, "running and ready", runningAndReady)
	}

	logind.Send("prepare true")
	released := logind.Expect("released 1", time.Minute)
	if i, ok := logind.Wait("delay-done", released, waitTimeout); !ok || i < 0 {
		t.Errorf("logind's delay was not ended by the lock's release: %q", logind.Lines())
	}

	for _, name := range []string{"ordinary", "critical"} {
		// The phase is set with the kill; the container's end shows once
		// the runtime's state is read again.
		p := n.waitPod(name, "phase Failed, container terminated", func(p *v1.Pod) bool {
			cs := containerOf(p, "app")
			return p.Status.Phase == v1.PodFailed && cs != nil && cs.State.Terminated != nil
		})
		if p.Status.Reason != "Terminated" || p.Status.Message != "Pod was terminated in response to imminent node shutdown." {
			t.Errorf("%s: reason %q message %q", name, p.Status.Reason, p.Status.Message)
		}
		found := false
		for _, c := range p.Status.Conditions {
			if c.Type == v1.DisruptionTarget {
				found = c.Status == v1.ConditionTrue && c.Reason == v1.PodReasonTerminationByKubelet
			}
		}
		if !found {
			t.Errorf("%s: no DisruptionTarget condition with reason TerminationByKubelet: %s", name, describePod(p))
		}
		cs := containerOf(p, "app")
		want := int32(0)
		if name == "ordinary" {
			want = 137 // TERM ignored: killed at the end of its group's 3s
		}
		if cs == nil || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != want {
			t.Errorf("%s: want the container terminated with exit code %d; got %s", name, want, describePod(p))
		}
	}
	for name, want := range map[string]string{"ordinary": "before", "critical": "after"} {
		got, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil || strings.TrimSpace(string(got)) != want {
			t.Errorf("%s's TERM handler wrote %q (%v), want %q: the ordinary pod is stopped before the critical one", name, got, err, want)
		}
	}

	// While the node shuts down, a new pod is refused as upstream does.
	n.writeManifest("late.yaml", shutdownPod("late", dir, "none", "", false))
	late := n.waitPod("late", "phase Failed", phaseIs(v1.PodFailed))
	if late.Status.Reason != "NodeShutdown" || late.Status.Message != "Pod was rejected: Pod was rejected as the node is shutting down." {
		t.Errorf("late pod: reason %q message %q", late.Status.Reason, late.Status.Message)
	}
	n.expectLog("the node's shutdown", "Shutdown manager detected shutdown event")

	// Upstream's record of the shutdown in root_dir, and its gauges.
	data, err := os.ReadFile(filepath.Join(n.rootDir, "graceful_node_shutdown_state"))
	var st struct{ StartTime, EndTime time.Time }
	if err != nil || json.Unmarshal(data, &st) != nil || st.StartTime.IsZero() || st.EndTime.Before(st.StartTime) {
		t.Errorf("graceful_node_shutdown_state: %q (%v), want a start and an end after it", data, err)
	}
	for name, want := range map[string]time.Time{
		"kubelet_graceful_shutdown_start_time_seconds": st.StartTime,
		"kubelet_graceful_shutdown_end_time_seconds":   st.EndTime,
	} {
		if got, ok := n.metric(name, nil); !ok || got != float64(want.Unix()) {
			t.Errorf("%s = %v (present %t), want %d", name, got, ok, want.Unix())
		}
	}
}
