//go:build e2e

package nodee2e

import (
	"fmt"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

var initAndSidecar = fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: ordered
spec:
  terminationGracePeriodSeconds: 5
  initContainers:
  - name: init1
    image: IMAGE
    command: ["sh", "-c", "sleep 1"]
  - name: sidecar
    image: IMAGE
    restartPolicy: Always
    command: %[1]s
  - name: init2
    image: IMAGE
    command: ["sh", "-c", "sleep 1"]
  containers:
  - name: app
    image: IMAGE
    command: %[1]s
`, untilTERM)

func TestInitContainersAndSidecarOrder(t *testing.T) {
	t.Parallel()
	// A resync far beyond the wait: each step of the start (init1's exit,
	// the sidecar's start, init2's exit) must follow from the runtime's
	// events, as upstream's; with the default 1m resync a lost event
	// only made the pod a minute late, within the wait.
	n := startNode(t, nodeOptions{settings: []string{`sync_frequency = "10m"`}})
	n.writeManifest("ordered.yaml", initAndSidecar)
	p := n.waitPod("ordered", "running and ready", runningAndReady)

	init1 := n.runtimeStatus(p.UID, "init1")
	sidecar := n.runtimeStatus(p.UID, "sidecar")
	init2 := n.runtimeStatus(p.UID, "init2")
	app := n.runtimeStatus(p.UID, "app")
	for _, c := range []*runtimeapi.ContainerStatus{init1, init2} {
		if c.State != runtimeapi.ContainerState_CONTAINER_EXITED || c.ExitCode != 0 {
			t.Errorf("init container %s is %s with exit code %d, want exited with 0", c.Metadata.Name, c.State, c.ExitCode)
		}
	}
	for _, c := range []*runtimeapi.ContainerStatus{sidecar, app} {
		if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
			t.Errorf("%s is %s, want running", c.Metadata.Name, c.State)
		}
	}
	// CRI times are nanoseconds since the epoch.
	for _, order := range []struct {
		what          string
		before, after int64
	}{
		{"init1 finished before the sidecar started", init1.FinishedAt, sidecar.StartedAt},
		{"the sidecar started before init2", sidecar.StartedAt, init2.StartedAt},
		{"init2 finished before app started", init2.FinishedAt, app.StartedAt},
	} {
		if order.before > order.after {
			t.Errorf("want %s: %d > %d", order.what, order.before, order.after)
		}
	}
	if cs := containerOf(p, "sidecar"); cs == nil || cs.State.Running == nil || cs.Started == nil || !*cs.Started || !cs.Ready {
		t.Errorf("the sidecar's status is not running, started and ready: %s", describePod(p))
	}
}
