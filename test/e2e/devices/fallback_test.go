//go:build e2e

package devicese2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/internal/e2e"
)

const nullResource = "microlet.dev/null"

// hostdevNull offers one device node of the test's own, a copy of
// /dev/null (so that no host device is needed), as microlet.dev/null.
// plugin_host's budget of one restart lets the test fail the plugin.
func hostdevNull(node string) string {
	return fmt.Sprintf(`plugin_host {
  restart_budget = 1
}
plugin "devices" "hostdev" {
  config {
    resources = [{ name = %q, paths = [%q] }]
  }
}
`, nullResource, node)
}

// TestPodsWaitWhileTheirDevicesPluginIsDown: while the devices plugin that
// serves a resource is failed, a new pod asking for it waits, with a
// message naming the plugin (ARCHITECTURE.md, "Failure policy per kind");
// once the operator changes its config, the plugin serves and the pod runs.
func TestPodsWaitWhileTheirDevicesPluginIsDown(t *testing.T) {
	t.Parallel()
	node := filepath.Join(e2e.ShortTempDir(t), "null")
	if err := unix.Mknod(node, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Fatalf("mknod %s: %v", node, err)
	}
	n := startNode(t, hostdevNull(node))

	n.eventually("devices/hostdev failed", func() (bool, string) {
		for pid, prog := range n.pluginProcesses() {
			if prog == "microlet-devices-hostdev" {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		return n.logHas("PLUGIN FAILED", "plugin=devices/hostdev"), "no PLUGIN FAILED line yet"
	})

	n.addPod("waits", devicePod("waits", nullResource, 1))
	n.eventually("the pod waits, naming the plugin", func() (bool, string) {
		return n.logHas("pod waits for admission", "waits-"+nodeName, "devices/hostdev"), "no such log line yet"
	})
	if p := n.pod("waits"); p != nil && p.Status.Phase == v1.PodRunning {
		t.Errorf("the pod runs while its devices plugin is down: %+v", p.Status)
	}

	// The operator acts: a changed plugin block restarts the plugin.
	n.plugins = strings.Replace(hostdevNull(node), "resources", "scan_interval = \"4s\"\n    resources", 1)
	n.writeConfig()
	pod := n.running("waits")
	if out := n.exec(pod, "ls", "-l", node); !strings.HasPrefix(out, "c") {
		t.Errorf("ls -l %s in the container: %q, want a character device", node, out)
	}
}

// logHas says whether one line of the core's log holds every fragment.
func (n *testNode) logHas(fragments ...string) bool {
	for _, line := range strings.Split(n.log.String(), "\n") {
		all := true
		for _, f := range fragments {
			all = all && strings.Contains(line, f)
		}
		if all {
			return true
		}
	}
	return false
}
