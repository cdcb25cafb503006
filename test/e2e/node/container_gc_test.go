//go:build e2e

package nodee2e

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// crashLoop is a pod whose container exits at once, restarted with the
// crash loop's back-off: a new dead container every 10, 20, 40... s.
const crashLoop = `apiVersion: v1
kind: Pod
metadata:
  name: crasher
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: IMAGE
    command: ["sh", "-c", "exit 1"]
`

// TestContainerGC: container GC (every minute, first at start; docs/gc.md)
// removes from the runtime the dead containers beyond the kept count
// (max_per_pod_container), and everything of a deleted pod.
func TestContainerGC(t *testing.T) {
	t.Parallel()
	plugins := defaultPlugins()
	for i := range plugins {
		if plugins[i].kind == "imagegc" {
			plugins[i].body = "max_per_pod_container = 1\ncontainer_minimum_age = \"0s\""
		}
	}
	n := startNode(t, nodeOptions{plugins: plugins})
	n.writeManifest("crasher.yaml", crashLoop)

	n.eventually("more dead containers than kept were made, and GC cut them to one", func() (bool, string) {
		p, err := n.pod("crasher")
		if err != nil || p == nil || containerOf(p, "app") == nil {
			return false, fmt.Sprintf("not listed with its container (%v)", err)
		}
		made := int(containerOf(p, "app").RestartCount) + 1
		listed, dead := 0, 0
		for _, c := range n.runtimeContainers(p.UID) {
			listed++
			if c.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
				dead++
			}
		}
		return made >= 3 && listed < made && dead <= 1,
			fmt.Sprintf("%d instances made, %d listed, %d of them dead", made, listed, dead)
	})
	p := n.waitPod("crasher", "listed", func(*v1.Pod) bool { return true })
	if cs := containerOf(p, "app"); cs.LastTerminationState.Terminated == nil {
		t.Errorf("after GC the container has no last termination state: %s", describePod(p))
	}

	// A deleted pod keeps nothing.
	n.removeManifest("crasher.yaml")
	n.waitPodGone("crasher")
	n.eventually("GC removed every container and sandbox of the deleted pod", func() (bool, string) {
		containers, sandboxes := n.runtimeContainers(p.UID), n.runtimeSandboxes(p.UID)
		return len(containers) == 0 && len(sandboxes) == 0,
			fmt.Sprintf("%d containers, %d sandboxes", len(containers), len(sandboxes))
	})
}

// TestDeletedPodsContainersGoAtOnce: the dead containers of a deleted pod
// are removed as they die (upstream's podContainerDeletor), not at the next
// container GC: on a node with no imagegc plugin, so no container GC at
// all, the pod's container goes and its sandbox stays for GC.
func TestDeletedPodsContainersGoAtOnce(t *testing.T) {
	t.Parallel()
	plugins := slices.DeleteFunc(defaultPlugins(), func(p plugin) bool { return p.kind == "imagegc" })
	n := startNode(t, nodeOptions{plugins: plugins})
	n.writeManifest("sleeper.yaml", sleeper("sleeper"))
	p := n.waitPod("sleeper", "running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })

	n.removeManifest("sleeper.yaml")
	n.waitPodGone("sleeper")
	n.eventually("the deleted pod's container is removed", func() (bool, string) {
		containers := n.runtimeContainers(p.UID)
		return len(containers) == 0, fmt.Sprintf("%d containers", len(containers))
	})
	if sandboxes := n.runtimeSandboxes(p.UID); len(sandboxes) != 1 {
		t.Errorf("the deleted pod has %d sandboxes on a node without container GC, want its one, stopped", len(sandboxes))
	}
}
