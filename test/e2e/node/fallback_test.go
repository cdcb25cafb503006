//go:build e2e

package nodee2e

import (
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// What the core does for a kind with no serving plugin (ARCHITECTURE.md,
// "Failure policy per kind"), on the real binary. The eviction kind's
// built-in evictor is tested under real pressure in test/e2e/pressure, the
// devices kind in test/e2e/devices.

// probed is a pod whose probes pass while /tmp/ready and /tmp/alive exist:
// with a serving probes plugin, removing them makes it unready at once and
// restarts it.
const probed = `apiVersion: v1
kind: Pod
metadata:
  name: probed
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: IMAGE
    command: ["sh", "-c", "touch /tmp/ready /tmp/alive; sleep 3600"]
    readinessProbe:
      exec: {command: ["cat", "/tmp/ready"]}
      periodSeconds: 1
      failureThreshold: 1
    livenessProbe:
      exec: {command: ["cat", "/tmp/alive"]}
      periodSeconds: 1
      failureThreshold: 1
      terminationGracePeriodSeconds: 1
`

// TestFallbacksOfUnconfiguredKinds: a node whose config has no probes,
// stats or imagegc plugin runs pods all the same: probes count as absent,
// /stats/summary answers 503, GC is off (logged once), and the eviction
// manager measures the node itself.
func TestFallbacksOfUnconfiguredKinds(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{plugins: []plugin{{kind: "cgroup", name: "default"}, {kind: "eviction", name: "kubelet"}}})
	n.writeManifest("probed.yaml", strings.ReplaceAll(probed, "touch /tmp/ready /tmp/alive; ", ""))

	t.Run("probes: containers count as having none", func(t *testing.T) {
		n.waitPod("probed", "running and ready, though its probes would fail", runningAndReady)
		time.Sleep(settleTime)
		p := n.waitPod("probed", "still ready", runningAndReady)
		if cs := containerOf(p, "app"); cs.RestartCount != 0 {
			t.Errorf("a liveness probe restarted the container: %s", describePod(p))
		}
	})

	t.Run("stats: /stats/summary answers 503", func(t *testing.T) {
		if code, body := n.readOnly("/stats/summary"); code != http.StatusServiceUnavailable {
			t.Errorf("GET /stats/summary: %d %s, want 503", code, body)
		}
	})

	t.Run("imagegc: GC is off, logged once", func(t *testing.T) {
		for _, what := range []string{"containers", "images"} {
			n.expectLog("GC of "+what+" logged off", "garbage collection of "+what+" is off")
		}
	})

	t.Run("eviction measures without a stats plugin", func(t *testing.T) {
		// A pushed pod: static pods are critical, never evicted.
		if code, body := n.push(http.MethodPost, "/pods", sleeper("victim")); code != http.StatusOK {
			t.Fatalf("POST /pods: %d %s", code, body)
		}
		n.waitPod("victim", "running", runningAndReady)
		// A threshold every live machine meets: the pod (BestEffort) is
		// evicted only if the manager measured the node's memory itself.
		n.plugins = []plugin{{kind: "cgroup", name: "default"},
			{kind: "eviction", name: "kubelet", body: `hard = ["memory.available<99%"]`}}
		n.writeConfig()
		p := n.waitPod("victim", "evicted", func(p *v1.Pod) bool {
			return p.Status.Phase == v1.PodFailed && p.Status.Reason == "Evicted"
		})
		if !strings.HasPrefix(p.Status.Message, "The node was low on resource: memory.") {
			t.Errorf("the pod's message %q does not name memory", p.Status.Message)
		}
	})
}

// TestFallbacksOfFailedPlugins: with its probes, imagegc and stats plugins
// failed (restarted past their budget), a node keeps every container's
// last verdicts, /stats/summary answers 503, and GC skips its cycles, each
// logged.
func TestFallbacksOfFailedPlugins(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{settings: []string{"plugin_host {\n  restart_budget = 1\n}"}})
	n.writeManifest("probed.yaml", probed)
	p := n.waitPod("probed", "running and ready", runningAndReady)
	app := runtimeID(containerOf(p, "app"))

	n.failPlugin("probes", "default")
	n.failPlugin("imagegc", "lru")
	n.failPlugin("stats", "default")

	t.Run("probes: verdicts are kept", func(t *testing.T) {
		n.exec(app, "rm", "/tmp/ready", "/tmp/alive")
		time.Sleep(settleTime)
		p := n.waitPod("probed", "still ready", runningAndReady)
		if cs := containerOf(p, "app"); cs.RestartCount != 0 || runtimeID(cs) != app {
			t.Errorf("the container restarted without a probes plugin: %s", describePod(p))
		}
	})

	t.Run("stats: /stats/summary answers 503", func(t *testing.T) {
		if code, body := n.readOnly("/stats/summary"); code != http.StatusServiceUnavailable {
			t.Errorf("GET /stats/summary: %d %s, want 503", code, body)
		}
	})

	t.Run("imagegc: GC skips its cycle", func(t *testing.T) {
		n.expectLog("a skipped container GC cycle logged",
			"garbage collection of containers skipped this cycle: the imagegc plugin does not serve")
	})

	t.Run("probes: a plugin back resyncs and its verdicts replace the kept ones", func(t *testing.T) {
		// The operator acts: a changed plugin block (here a sha256 pin of
		// the same binary) ends the failed state. Last: any config reload
		// restarts every failed plugin.
		for i := range n.plugins {
			if n.plugins[i].kind == "probes" {
				n.plugins[i].sha256 = fileSHA256(t, filepath.Join(binDir, "microlet-probes-default"))
			}
		}
		n.writeConfig()
		p := n.waitPod("probed", "restarted by the failing liveness probe", func(p *v1.Pod) bool {
			cs := containerOf(p, "app")
			return cs != nil && cs.RestartCount >= 1
		})
		if cs := containerOf(p, "app"); cs.LastTerminationState.Terminated == nil {
			t.Errorf("the restarted container has no last termination state: %s", describePod(p))
		}
		n.waitPod("probed", "ready again in its new container", runningAndReady)
	})
}

// failPlugin kills the plugin's process until the plugin host gives up on
// it (set plugin_host's restart_budget low): its kind falls back until the
// config or the binary changes.
func (n *testNode) failPlugin(kind, name string) {
	n.t.Helper()
	n.eventually(kind+"/"+name+" failed", func() (bool, string) {
		if pid := n.pluginPID(kind, name); pid != 0 {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, line := range strings.Split(n.log.String(), "\n") {
			if containsAll(line, []string{"PLUGIN FAILED", "plugin=" + kind + "/" + name}) {
				return true, ""
			}
		}
		return false, "no PLUGIN FAILED line yet"
	})
}

// fileSHA256 is the hex SHA-256 of a file's content.
func fileSHA256(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// readOnly GETs path on the node API's read-only port.
func (n *testNode) readOnly(path string) (int, string) {
	n.t.Helper()
	resp, err := httpClient.Get("http://" + n.readOnlyAddr + path)
	if err != nil {
		n.t.Fatalf("GET %s: %v", path, err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(body)
}
