//go:build e2e

package nodee2e

import (
	"net/http"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestPodNamesTooLongForTheLogDirectory: a valid pod name (up to 253
// characters) can make the log directory's name, <ns>_<name>_<uid>, longer
// than a file name may be. Such a pod is refused at admission with the
// reason, instead of waiting forever on ENAMETOOLONG; the longest name that
// fits runs.
func TestPodNamesTooLongForTheLogDirectory(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	// <pod name> = <base>-<node>; the directory adds "default_" and "_<uid>",
	// and a pushed pod's UID is a hash of 32 hex digits.
	const fileNameMax, uidLen = 255, 32
	fitting := strings.Repeat("f", fileNameMax-len("default__")-uidLen-len("-"+nodeName))
	tooLong := strings.Repeat("l", 240-len("-"+nodeName))
	if code, body := n.push(http.MethodPost, "/pods", podList(sleeper(fitting), sleeper(tooLong))); code != http.StatusOK {
		t.Fatalf("POST /pods: %d %s", code, body)
	}
	p := n.waitPod(tooLong, "refused", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if p.Status.Reason != "PodNameTooLong" || !strings.Contains(p.Status.Message, "at most 214 characters") {
		t.Errorf("the refused pod's status: %s %q", p.Status.Reason, p.Status.Message)
	}
	n.waitPod(fitting, "running and ready", runningAndReady)
}
