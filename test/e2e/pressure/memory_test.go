//go:build e2e

package pressuree2e

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// allocatableNode is a node whose pods may use podsMemory bytes in all (the
// cgroup plugin's kube_reserved takes the rest of the machine), as upstream's
// MemoryAllocatableEviction test sets it up: pressure comes from the test's
// pods alone, whatever else runs on the machine, and the kernel's OOM killer
// acts only at the kubepods limit, far above the eviction threshold. With
// a nil eviction no eviction plugin runs: the core's built-in evictor decides.
func allocatableNode(t *testing.T, podsMemory int64, eviction *Plugin, settings map[string]string) *Node {
	t.Helper()
	plugins := []Plugin{{Kind: "cgroup", Name: "default", Body: fmt.Sprintf("kube_reserved = { memory = \"%d\" }", KubeReservedFor(t, podsMemory))}}
	if eviction != nil {
		plugins = append(plugins, *eviction)
	}
	plugins = append(plugins, Plugin{Kind: "imagegc", Name: "lru"}, Plugin{Kind: "stats", Name: "default"})
	return Start(t, Options{Plugins: plugins, Settings: settings})
}

// TestMemoryHogEvicted: a pod that fills a memory-backed emptyDir past the
// allocatable threshold is evicted, with the kubelet's status and message,
// and nothing else happens: the other pods run on, and the kernel's OOM
// killer never acts.
//
// Pods may use 700Mi; memory.available<300Mi holds 300Mi back, so
// allocatable is 400Mi and allocatableMemory.available<300Mi (the copy the
// kubelet makes) is met once the pods' cgroup's working set passes 100Mi. The hog
// stops at 300Mi: no OOM is possible before or after the eviction.
func TestMemoryHogEvicted(t *testing.T) {
	t.Parallel()
	n := allocatableNode(t, 700*Mi, &Plugin{Kind: "eviction", Name: "kubelet", Body: `hard = ["memory.available<300Mi"]`}, nil)
	innocents := []PodSpec{
		{Name: "innocent-a", Script: WaitForTermination, MemoryRequest: "16Mi"},
		{Name: "innocent-b", Script: WaitForTermination, MemoryRequest: "16Mi"},
	}
	for _, p := range innocents {
		n.Push(p.Manifest())
		n.WaitPod(p.Name, "running", Running)
	}
	n.Push(PodSpec{Name: "hog", Script: FillScript(10, 30, "0.2"), MemoryVolume: true}.Manifest())

	hog := n.WaitPod("hog", "evicted", Evicted)
	n.WaitStopped("hog")
	if !strings.HasPrefix(hog.Status.Message, "The node was low on resource: memory.") {
		t.Errorf("hog's message %q does not name memory", hog.Status.Message)
	}
	if !hasCondition(hog, v1.DisruptionTarget) {
		t.Errorf("hog has no DisruptionTarget condition: %+v", hog.Status.Conditions)
	}
	for _, p := range innocents {
		if got := n.Pod(p.Name); got == nil || !Running(got) || restarts(got) > 0 {
			t.Errorf("innocent pod after the eviction: %v, want it running, never restarted", describe(got))
		}
	}
	n.expectEvictions("allocatableMemory.available", 1)
	if line := logLine(n.Log(), "evicting pod"); !strings.Contains(line, "signal=allocatableMemory.available") || !strings.Contains(line, "pod=default/hog-") || !strings.Contains(line, "memory_working_set_bytes=") {
		t.Errorf("the eviction's log line %q lacks the signal, the pod or its usage", line)
	}
	for _, p := range append([]string{"hog"}, names(innocents)...) {
		n.expectNoOOMKill(p)
	}
}

// expectEvictions waits until kubelet_evictions counts want evictions for
// signal: the pod's status says Evicted as soon as its kill starts, the
// metric once the kill is done.
func (n *Node) expectEvictions(signal string, want float64) {
	n.t.Helper()
	n.Eventually(fmt.Sprintf("kubelet_evictions{eviction_signal=%q} = %v", signal, want), func() (bool, string) {
		got, _ := n.Metric("kubelet_evictions", map[string]string{"eviction_signal": signal})
		return got == want, fmt.Sprint(got)
	})
}

// expectNoOOMKill fails the test if a container of the named pod was killed
// by the kernel's OOM killer, as its status or the runtime tells.
func (n *Node) expectNoOOMKill(name string) {
	n.t.Helper()
	p := n.Pod(name)
	if p == nil {
		n.t.Errorf("pod %s is gone", name)
		return
	}
	for _, c := range p.Status.ContainerStatuses {
		for _, st := range []v1.ContainerState{c.State, c.LastTerminationState} {
			if st.Terminated != nil && st.Terminated.Reason == "OOMKilled" {
				n.t.Errorf("pod %s: container %s was OOM-killed", name, c.Name)
			}
		}
	}
	for _, c := range n.Containers(p.UID) {
		st, err := n.CRI.ContainerStatus(n.t.Context(), &runtimeapi.ContainerStatusRequest{ContainerId: c.Id})
		if err == nil && st.GetStatus().GetReason() == "OOMKilled" {
			n.t.Errorf("pod %s: the runtime reports container %s OOM-killed", name, c.Id)
		}
	}
}

func hasCondition(p *v1.Pod, typ v1.PodConditionType) bool {
	return slices.ContainsFunc(p.Status.Conditions, func(c v1.PodCondition) bool {
		return c.Type == typ && c.Status == v1.ConditionTrue
	})
}

func restarts(p *v1.Pod) int32 {
	var n int32
	for _, c := range p.Status.ContainerStatuses {
		n += c.RestartCount
	}
	return n
}

func describe(p *v1.Pod) string {
	if p == nil {
		return "not listed"
	}
	return DescribePod(p)
}

func names(specs []PodSpec) []string {
	var out []string
	for _, s := range specs {
		out = append(out, s.Name)
	}
	return out
}

// logLine is the first line of log containing fragment, "" if none.
func logLine(log, fragment string) string {
	for _, line := range strings.Split(log, "\n") {
		if strings.Contains(line, fragment) {
			return line
		}
	}
	return ""
}
