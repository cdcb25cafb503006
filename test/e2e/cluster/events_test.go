//go:build e2e

package clustere2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/microlet/microlet/internal/devnode"
	pressuree2e "github.com/microlet/microlet/test/e2e/pressure"
)

// TestEventsVisibleWithKubectl: `kubectl get events` and `kubectl
// describe` show the node's events as a kubelet's: Starting and NodeReady
// for the node; Pulled, Created and Started for a pod from the API server,
// Killing when it is deleted; the same for a pod of a local source, whose
// events are about its own reference (namespace, name and UID), as the
// kubelet records a static pod's. Each comes from source kubelet on the
// node.
func TestEventsVisibleWithKubectl(t *testing.T) {
	t.Parallel()
	n := startReadyNode(t)

	manifest := filepath.Join(t.TempDir(), "pod.yaml")
	name := "evented-" + n.Name
	if err := os.WriteFile(manifest, []byte(fmt.Sprintf(apiPodManifest, name, n.Name, devnode.DefaultTestImage)), 0o644); err != nil {
		t.Fatal(err)
	}
	// The controller-manager makes the namespace's default service
	// account, which admission wants, shortly after the cluster starts.
	n.Eventually("the default service account", func() (bool, string) {
		_, err := cluster(t).Admin.CoreV1().ServiceAccounts("default").Get(context.Background(), "default", metav1.GetOptions{})
		return err == nil, fmt.Sprint(err)
	})
	kubectl(t, "apply", "-f", manifest)
	var apiPod v1.Pod
	if err := json.Unmarshal([]byte(kubectl(t, "get", "pod", name, "-o", "json")), &apiPod); err != nil {
		t.Fatal(err)
	}
	checkPodEvents(t, n, &apiPod)
	n.Eventually("kubectl describe pod to list the pod's events", func() (bool, string) {
		out := kubectl(t, "describe", "pod", name)
		return strings.Contains(out, "Started container app") && strings.Contains(out, "kubelet"), out
	})
	kubectl(t, "delete", "pod", name, "--wait=false")
	waitForReasons(t, n, "the API pod's Killing event", podEvents(t, &apiPod), "Killing")

	n.Push(pressuree2e.PodSpec{Name: "pushed", Script: pressuree2e.WaitForTermination}.Manifest())
	local := n.WaitPod("pushed", "running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	checkPodEvents(t, n, local)
	n.Delete("pushed")
	waitForReasons(t, n, "the local pod's Killing event", podEvents(t, local), "Killing")

	nodeEvents := func() []v1.Event {
		return listEvents(t, "default", "involvedObject.kind=Node,involvedObject.name="+n.Name)
	}
	waitForReasons(t, n, "the node's events", nodeEvents, "Starting", "NodeReady", "NodeHasSufficientMemory")
	t.Logf("the node's events:\n%s", kubectl(t, "get", "events", "--field-selector", "involvedObject.kind=Node,involvedObject.name="+n.Name))

	// What a user reads: the plain table.
	out := kubectl(t, "get", "events", "--field-selector", "involvedObject.name="+name)
	t.Logf("kubectl get events:\n%s", out)
	for _, want := range []string{"Pulled", "Created", "Started", "Killing", "pod/" + name} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl get events lacks %q:\n%s", want, out)
		}
	}
}

// apiPodManifest is a pod bound to a node: name, node, image.
const apiPodManifest = `apiVersion: v1
kind: Pod
metadata:
  name: %s
  namespace: default
spec:
  nodeName: %s
  terminationGracePeriodSeconds: 5
  automountServiceAccountToken: false
  containers:
  - name: app
    image: %s
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "trap 'exit 0' TERM; sleep 100000 & wait"]
`

// checkPodEvents waits for pod's Pulled, Created and Started events and
// checks their source, object and message.
func checkPodEvents(t *testing.T, n *clusterNode, pod *v1.Pod) {
	t.Helper()
	events := podEvents(t, pod)
	waitForReasons(t, n, "the events of pod "+pod.Name, events, "Pulled", "Created", "Started")
	for _, e := range events() {
		if e.Source.Component != "kubelet" || e.Source.Host != n.Name || e.InvolvedObject.UID != pod.UID {
			t.Errorf("event %s from %+v about %s, want from the kubelet on %s about the pod (uid %s)", e.Reason, e.Source, e.InvolvedObject.UID, n.Name, pod.UID)
		}
		if e.Reason == "Started" && (e.InvolvedObject.FieldPath != "spec.containers{app}" || e.Message != "Started container app") {
			t.Errorf("Started event about %q: %q", e.InvolvedObject.FieldPath, e.Message)
		}
	}
}

// podEvents lists the events about pod (by name: a pod of a local source
// has no object in the API).
func podEvents(t *testing.T, pod *v1.Pod) func() []v1.Event {
	return func() []v1.Event {
		return listEvents(t, pod.Namespace, "involvedObject.kind=Pod,involvedObject.name="+pod.Name)
	}
}

// checkEvictionEvents waits for an evicted pod's Evicted event, with the
// pod's status message, and the node's EvictionThresholdMet.
func checkEvictionEvents(t *testing.T, n *clusterNode, evicted *v1.Pod) {
	t.Helper()
	waitForReasons(t, n, "the evicted pod's event", podEvents(t, evicted), "Evicted")
	for _, e := range podEvents(t, evicted)() {
		if e.Reason == "Evicted" && (e.Message != evicted.Status.Message || e.InvolvedObject.UID != evicted.UID || e.Type != v1.EventTypeWarning) {
			t.Errorf("Evicted event %s %q about %s, want a warning with the pod's message %q about %s", e.Type, e.Message, e.InvolvedObject.UID, evicted.Status.Message, evicted.UID)
		}
	}
	waitForReasons(t, n, "the node's EvictionThresholdMet", func() []v1.Event {
		return listEvents(t, "default", "involvedObject.kind=Node,involvedObject.name="+n.Name)
	}, "EvictionThresholdMet")
}

// listEvents are the events in namespace with a field selector, read
// as kubectl reads them (the same list call, without a process per poll).
func listEvents(t *testing.T, namespace, selector string) []v1.Event {
	t.Helper()
	list, err := cluster(t).Admin.CoreV1().Events(namespace).List(context.Background(), metav1.ListOptions{FieldSelector: selector})
	if err != nil {
		t.Fatalf("list events: %v", err)
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
