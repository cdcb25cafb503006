//go:build e2e

package nodee2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// postStartSeen waits for the file its postStart hook writes and copies
// what it read to /tmp/seen.
var postStartSeen = `apiVersion: v1
kind: Pod
metadata:
  name: poststart
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: IMAGE
    command: ["sh", "-c", "until [ -f /tmp/hook ]; do sleep 0.2; done; cp /tmp/hook /tmp/seen; trap 'exit 0' TERM; while true; do sleep 1; done"]
    lifecycle:
      postStart:
        exec: {command: ["sh", "-c", "echo written-by-poststart > /tmp/hook"]}
`

// preStopWrites writes into a hostPath volume from its preStop hook.
func preStopWrites(hostDir string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: prestop
spec:
  terminationGracePeriodSeconds: 10
  volumes:
  - name: out
    hostPath: {path: %q, type: DirectoryOrCreate}
  containers:
  - name: app
    image: IMAGE
    command: %s
    volumeMounts: [{name: out, mountPath: /out}]
    lifecycle:
      preStop:
        exec: {command: ["sh", "-c", "echo written-by-prestop > /out/prestop"]}
`, hostDir, untilTERM)
}

func TestLifecycleHooks(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	hostDir := n.hostPath("prestop")
	n.writeManifest("poststart.yaml", postStartSeen)
	n.writeManifest("prestop.yaml", preStopWrites(hostDir))

	post := n.waitPod("poststart", "running and ready", runningAndReady)
	var seen string
	n.eventually("the container sees the file its postStart hook wrote", func() (bool, string) {
		out, code := n.exec(runtimeID(containerOf(post, "app")), "cat", "/tmp/seen")
		seen = out
		return code == 0, out
	})
	if strings.TrimSpace(seen) != "written-by-poststart" {
		t.Errorf("the container read %q from the hook's file, want written-by-poststart", seen)
	}

	pre := n.waitPod("prestop", "running and ready", runningAndReady)
	n.removeManifest("prestop.yaml")
	n.waitPodGone("prestop")
	n.waitRuntimeStopped(pre.UID)
	got, err := os.ReadFile(filepath.Join(hostDir, "prestop"))
	if err != nil || strings.TrimSpace(string(got)) != "written-by-prestop" {
		t.Errorf("the preStop hook's file holds %q (%v), want written-by-prestop", got, err)
	}
}
