//go:build e2e

package nodee2e

import (
	"net/http"
	"testing"
)

func TestPushSource(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	if code, body := n.push(http.MethodPost, "/pods", podList(sleeper("pushed-a"), sleeper("pushed-b"))); code != http.StatusOK {
		t.Fatalf("POST /pods: %d %s", code, body)
	}
	a := n.waitPod("pushed-a", "running and ready", runningAndReady)
	n.waitPod("pushed-b", "running and ready", runningAndReady)

	if code, body := n.push(http.MethodDelete, "/pods/default/pushed-a", ""); code != http.StatusOK {
		t.Fatalf("DELETE /pods/default/pushed-a: %d %s", code, body)
	}
	n.waitPodGone("pushed-a")
	n.waitRuntimeStopped(a.UID)
	if p := n.waitPod("pushed-b", "still running and ready", runningAndReady); containerOf(p, "app").RestartCount != 0 {
		t.Errorf("pushed-b restarted: %s", describePod(p))
	}
}
