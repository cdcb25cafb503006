//go:build e2e

package nodee2e

import (
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// graceSeconds is the stubborn pod's terminationGracePeriodSeconds.
const graceSeconds = 5

// stubborn traps SIGTERM and keeps running: only SIGKILL, after the grace
// period, ends it.
const stubborn = `apiVersion: v1
kind: Pod
metadata:
  name: stubborn
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: IMAGE
    command: ["sh", "-c", "trap 'echo ignoring TERM' TERM; while true; do sleep 1; done"]
`

func TestGracePeriodHonoured(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	n.writeManifest("stubborn.yaml", stubborn)
	p := n.waitPod("stubborn", "running and ready", runningAndReady)

	deleted := time.Now()
	n.removeManifest("stubborn.yaml")
	n.waitRuntimeStopped(p.UID)
	st := n.runtimeStatus(p.UID, "app")
	if st.State != runtimeapi.ContainerState_CONTAINER_EXITED {
		t.Fatalf("the container is %s, want exited", st.State)
	}
	lived := time.Unix(0, st.FinishedAt).Sub(deleted)
	// The upper bound only catches a kill that never came on its own.
	if lived < graceSeconds*time.Second || lived > graceSeconds*time.Second+time.Minute {
		t.Errorf("the container finished %v after its pod was deleted; want its grace period of %ds (and not a minute more)", lived, graceSeconds)
	}
	if st.ExitCode != 137 {
		t.Errorf("the container exited with %d, want 137 (SIGKILL after the grace period)", st.ExitCode)
	}
}
