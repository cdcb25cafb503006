//go:build e2e

package nodee2e

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// brokenRestartPolicy is sleeper(name) with an invalid restart policy on
// line 6.
func brokenRestartPolicy(name string) string {
	return strings.Replace(sleeper(name), "spec:\n", "spec:\n  restartPolicy: Sometimes\n", 1)
}

func TestBrokenManifestBesideGoodOnes(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})

	n.writeManifest("good-a.yaml", sleeper("good-a"))
	n.writeManifest("good-b.yaml", sleeper("good-b"))
	n.writeManifest("broken.yaml", brokenRestartPolicy("broken"))
	n.waitPod("good-a", "running and ready", runningAndReady)
	goodB := n.waitPod("good-b", "running and ready", runningAndReady)

	// The broken file is reported once, with its path and the line of the
	// problem, and runs nothing.
	n.expectLog("the broken manifest reported with its file and line",
		"static pod manifest is broken; no pod runs from it",
		"path="+filepath.Join(n.manifestDir, "broken.yaml"),
		`line 6: spec.restartPolicy: Unsupported value: \"Sometimes\"`)
	if p, err := n.pod("broken"); err != nil || p != nil {
		t.Errorf("the broken manifest's pod is on /pods (%v): %v", err, p)
	}

	// A good file that breaks keeps its last good pod running.
	n.writeManifest("good-b.yaml", brokenRestartPolicy("good-b"))
	n.expectLog("good-b.yaml reported broken, keeping its pod",
		"static pod manifest is broken; its last good pod keeps running until the file is fixed or removed",
		"path="+filepath.Join(n.manifestDir, "good-b.yaml"))
	// Give the loop time to act on a removal it must not make: a few
	// housekeeping passes.
	time.Sleep(5 * time.Second)
	after := n.waitPod("good-b", "still running and ready", runningAndReady)
	if after.UID != goodB.UID {
		t.Errorf("good-b's UID changed from %s to %s after its manifest broke", goodB.UID, after.UID)
	}
	if cs := containerOf(after, "app"); cs == nil || cs.RestartCount != 0 || cs.ContainerID != containerOf(goodB, "app").ContainerID {
		t.Errorf("good-b's container changed after its manifest broke: %s", describePod(after))
	}
	if st := n.runtimeStatus(goodB.UID, "app"); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("good-b's container is %s on the runtime, want running", st.State)
	}
	for _, file := range []string{"broken.yaml", "good-b.yaml"} {
		labels := map[string]string{"source": "file", "manifest": filepath.Join(n.manifestDir, file)}
		if v, ok := n.metric("microlet_static_pod_manifest_errors_total", labels); !ok || v < 1 {
			t.Errorf("microlet_static_pod_manifest_errors_total%v = %v (found: %t), want at least 1", labels, v, ok)
		}
	}
}
