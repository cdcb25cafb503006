//go:build e2e

package nodee2e

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// A hog allocates 64 MiB at once: dd's block buffer, filled from
// /dev/zero.
const hog = `dd if=/dev/zero of=/dev/null bs=64M count=1`

// TestOOMKilled: a container over its 32Mi memory limit is killed by the
// kernel and ends Terminated with reason OOMKilled and exit code 137
// (containerd's reason, passed on as the kubelet does); a hog over its
// pod-level limit is killed too, and the OOM watcher reads the kill from
// /dev/kmsg (a log line naming the pod's cgroup, and the metric).
func TestOOMKilled(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	n.writeManifest("container-hog.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: container-hog
spec:
  restartPolicy: Never
  containers:
  - name: app
    image: IMAGE
    command: ["sh", "-c", "`+hog+`"]
    resources:
      limits: {memory: 32Mi}
`)
	n.writeManifest("pod-hog.yaml", `apiVersion: v1
kind: Pod
metadata:
  name: pod-hog
spec:
  restartPolicy: Never
  resources:
    limits: {memory: 32Mi}
  containers:
  - name: app
    image: IMAGE
    command: ["sh", "-c", "`+hog+`"]
`)
	for _, name := range []string{"container-hog", "pod-hog"} {
		p := n.waitPod(name, "phase Failed", phaseIs(v1.PodFailed))
		cs := containerOf(p, "app")
		if cs == nil || cs.State.Terminated == nil || cs.State.Terminated.Reason != "OOMKilled" || cs.State.Terminated.ExitCode != 137 {
			t.Errorf("%s: want the container terminated with reason OOMKilled and exit code 137; got %s", name, describePod(p))
		}
		// The watcher names the cgroup whose limit was hit: the pod's
		// (cgroupfs paths hold "pod<uid>").
		n.expectLog(name+"'s kill in the kernel log", "the kernel's OOM killer killed a process", "scope=cgroup", "process=dd",
			"limit_of=", "pod"+strings.ReplaceAll(string(p.UID), "-", "_"))
	}
	if kills, ok := n.metric("microlet_oom_kills_total", map[string]string{"scope": "cgroup"}); !ok || kills < 2 {
		t.Errorf("microlet_oom_kills_total{scope=cgroup} = %v (present %t), want at least 2", kills, ok)
	}
}
