//go:build e2e

package clustere2e

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	pressuree2e "github.com/microlet/microlet/test/e2e/pressure"
)

// TestEventsVisibleWithKubectl: `kubectl get events` shows the node's
// events as a kubelet's: Starting and NodeReady for the node, Pulled,
// Created and Started for a pod of the node, Killing when it is deleted,
// each from source kubelet on the node.
func TestEventsVisibleWithKubectl(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	waitReady(t, n, "")
	n.Push(pressuree2e.PodSpec{Name: "evented", Script: pressuree2e.WaitForTermination}.Manifest())
	pod := n.WaitPod("evented", "running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })

	podEvents := func() []v1.Event {
		return kubectlEvents(t, pod.Namespace, "involvedObject.kind=Pod,involvedObject.name="+pod.Name)
	}
	waitForReasons(t, n, "the pod's events", podEvents, "Pulled", "Created", "Started")
	for _, e := range podEvents() {
		if e.Source.Component != "kubelet" || e.Source.Host != n.Name || e.InvolvedObject.UID != pod.UID {
			t.Errorf("event %s from %+v about %s, want from the kubelet on %s about the pod (uid %s)", e.Reason, e.Source, e.InvolvedObject.UID, n.Name, pod.UID)
		}
		if e.Reason == "Started" && (e.InvolvedObject.FieldPath != "spec.containers{app}" || e.Message != "Started container app") {
			t.Errorf("Started event about %q: %q", e.InvolvedObject.FieldPath, e.Message)
		}
	}

	n.Delete("evented")
	waitForReasons(t, n, "the pod's Killing event", podEvents, "Killing")

	nodeEvents := func() []v1.Event {
		return kubectlEvents(t, "default", "involvedObject.kind=Node,involvedObject.name="+n.Name)
	}
	waitForReasons(t, n, "the node's events", nodeEvents, "Starting", "NodeReady", "NodeHasSufficientMemory")
	t.Logf("the node's events:\n%s", kubectl(t, "get", "events", "--field-selector", "involvedObject.kind=Node,involvedObject.name="+n.Name))

	// What a user reads: the plain table.
	out := kubectl(t, "get", "events", "-n", pod.Namespace, "--field-selector", "involvedObject.name="+pod.Name)
	t.Logf("kubectl get events:\n%s", out)
	for _, want := range []string{"Pulled", "Created", "Started", "Killing", "pod/" + pod.Name} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get events lacks %q:\n%s", want, out)
		}
	}
}

// kubectlEvents are the events `kubectl get events` lists in namespace
// with a field selector.
func kubectlEvents(t *testing.T, namespace, selector string) []v1.Event {
	t.Helper()
	var list v1.EventList
	out := kubectl(t, "get", "events", "-n", namespace, "--field-selector", selector, "-o", "json")
	if err := json.Unmarshal([]byte(out), &list); err != nil {
		t.Fatalf("kubectl get events -o json: %v", err)
	}
	return list.Items
}

// waitForReasons waits until events lists every reason.
func waitForReasons(t *testing.T, n *clusterNode, what string, events func() []v1.Event, reasons ...string) {
	t.Helper()
	n.Eventually(what+" "+strings.Join(reasons, ", "), func() (bool, string) {
		var seen []string
		for _, e := range events() {
			seen = append(seen, e.Reason)
		}
		for _, r := range reasons {
			if !slices.Contains(seen, r) {
				return false, fmt.Sprint(seen)
			}
		}
		return true, ""
	})
}
