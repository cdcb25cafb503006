//go:build e2e

package nodee2e

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/microlet/microlet/internal/e2e"
)

func TestKilledCoreLeavesNoPluginProcess(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	running := n.pluginProcesses()
	for _, p := range n.plugins {
		if n.pluginPID(p.kind, p.name) == 0 {
			t.Errorf("no process runs plugin %s/%s; the core's children: %v", p.kind, p.name, running)
		}
	}
	n.killCore() // fails the test if a plugin process outlives the core
	n.startCore("")
}

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	config := func(hard string) string {
		path := filepath.Join(dir, "microlet.hcl")
		text := "node_name = \"e2e-node\"\n" +
			"plugin_dir = \"" + binDir + "\"\n" +
			"\n" +
			"plugin \"eviction\" \"kubelet\" {\n" +
			"  config {\n" +
			"    hard = [\"" + hard + "\"]\n" + // line 6
			"  }\n" +
			"}\n"
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}

	t.Run("a bad plugin block", func(t *testing.T) {
		path := config("memory.available>100Mi")
		stdout, stderr, code := validate(t, path)
		want := path + `:6: plugin "eviction" "kubelet": config.hard: "memory.available>100Mi": expected <signal><<value>, such as "memory.available<100Mi"`
		if code != 1 || !strings.Contains(stderr, want) {
			t.Errorf("exit code %d, stdout %q, stderr %q; want 1 and the plugin's message at its line: %s", code, stdout, stderr, want)
		}
	})
	t.Run("a good config", func(t *testing.T) {
		stdout, stderr, code := validate(t, config("memory.available<100Mi"))
		if code != 0 || !strings.Contains(stdout, "config ok") {
			t.Errorf("exit code %d, stdout %q, stderr %q; want 0 and config ok", code, stdout, stderr)
		}
	})
	t.Run("the shipped example", func(t *testing.T) {
		stdout, stderr, code := validate(t, "../../../examples/microlet.hcl", "--plugin-dir", binDir)
		if code != 0 || !strings.Contains(stdout, "config ok") {
			t.Errorf("exit code %d, stdout %q, stderr %q; want 0 and config ok", code, stdout, stderr)
		}
	})
}

// validate runs microlet config validate on path with flags.
func validate(t *testing.T, path string, flags ...string) (stdout, stderr string, code int) {
	t.Helper()
	cmd := microletCommand(append(append([]string{"config", "validate"}, flags...), path)...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("running microlet config validate: %v", err)
	}
	return out.String(), errOut.String(), cmd.ProcessState.ExitCode()
}

func TestEvictionStrategySwitchedByEditingTheConfig(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{plugins: []plugin{{kind: "cgroup", name: "default"}, {kind: "eviction", name: "kubelet"}}})
	pods := n.runningPods("p", 1)
	kubelet := n.pluginPID("eviction", "kubelet")
	if kubelet == 0 {
		t.Fatalf("no process runs microlet-eviction-kubelet; the core's children: %v", n.pluginProcesses())
	}

	for i, p := range n.plugins {
		if p.kind == "eviction" {
			n.plugins[i].name = "priority"
		}
	}
	n.writeConfig()
	n.eventually("healthz names the priority strategy, not the kubelet one", func() (bool, string) {
		checks := n.healthzChecks()
		return slices.Contains(checks, "plugin-eviction-priority") && !slices.Contains(checks, "plugin-eviction-kubelet"),
			strings.Join(checks, " ")
	})
	if code, body := n.healthz(""); code != 200 {
		t.Errorf("healthz after the switch: %d %s", code, body)
	}
	n.eventually("the kubelet strategy's process exits", func() (bool, string) {
		return e2e.ProcessGone(kubelet), ""
	})
	if n.pluginPID("eviction", "priority") == 0 {
		t.Errorf("no process runs microlet-eviction-priority; the core's children: %v", n.pluginProcesses())
	}
	n.expectUntouched(pods)
}

// A config naming a binary that does not exist cannot be applied: the old
// process keeps serving, and /healthz and the config_applied metric say
// that the node runs something other than its config asks.
func TestConfigNamingAMissingBinaryShowsInHealth(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{plugins: []plugin{{kind: "cgroup", name: "default"}, {kind: "eviction", name: "kubelet"}}})
	eviction := &n.plugins[1]
	serving := n.pluginPID("eviction", "kubelet")
	eviction.binary = "microlet-eviction-missing"
	n.writeConfig()
	n.eventually("healthz fails the eviction plugin's check for the config it does not run", func() (bool, string) {
		code, body := n.healthz("?verbose")
		return code == 500 && strings.Contains(body, "[-]plugin-eviction-kubelet failed: ") &&
			strings.Contains(body, "does not run what the config asks") && strings.Contains(body, "microlet-eviction-missing"), body
	})
	if pid := n.pluginPID("eviction", "kubelet"); pid != serving {
		t.Errorf("the eviction plugin's process is %d, want %d still serving", pid, serving)
	}
	if v, ok := n.metric("microlet_plugin_config_applied", map[string]string{"kind": "eviction", "name": "kubelet"}); !ok || v != 0 {
		t.Errorf("microlet_plugin_config_applied{eviction,kubelet} = %v (found %v), want 0", v, ok)
	}

	// Back to the binary that exists: applied again, healthy.
	eviction.binary = ""
	n.writeConfig()
	n.eventually("healthz passes once the config is applied", func() (bool, string) {
		code, body := n.healthz("?verbose")
		return code == 200, body
	})
}
