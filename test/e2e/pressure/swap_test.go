//go:build e2e

package pressuree2e

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/internal/e2e"
)

// softAllocatable is the eviction config of the swap test: a soft
// allocatable threshold with a grace period long enough to switch the
// strategy while it runs.
const softAllocatable = `hard = []
soft = ["allocatableMemory.available<400Mi"]
soft_grace_period = ["allocatableMemory.available=40s"]`

// TestStrategySwitchUnderPressure switches the eviction strategy from
// kubelet to priority by editing the config while memory pressure holds:
// the core and the pods run on, no cycle falls to the built-in evictor,
// MemoryPressure stays, and the eviction that ends the grace period follows
// the priority strategy's ranking, not the kubelet's.
//
// Pods may use 700Mi, all allocatable (no hard threshold reserves any), so
// the soft threshold is met past 300Mi of working sets. "old-small" (priority
// -10) holds 100Mi, within its request; "young-big" (priority 1000) holds
// 250Mi, far beyond its own. The kubelet ranks young-big first (over its
// request); the priority strategy ranks old-small first (lower priority).
func TestStrategySwitchUnderPressure(t *testing.T) {
	t.Parallel()
	n := allocatableNode(t, 700*Mi, &Plugin{Kind: "eviction", Name: "kubelet", Body: softAllocatable},
		map[string]string{"eviction_monitoring_interval": `"2s"`})
	low, high := int32(-10), int32(1000)
	n.Push(PodSpec{Name: "old-small", Script: FillScript(10, 10, "0.1"), MemoryRequest: "200Mi", Priority: &low, MemoryVolume: true}.Manifest())
	n.WaitPod("old-small", "running", Running)
	n.Push(PodSpec{Name: "young-big", Script: FillScript(10, 25, "0.1"), MemoryRequest: "10Mi", Priority: &high, MemoryVolume: true}.Manifest())
	n.WaitPod("young-big", "running", Running)
	n.awaitMemoryPressure("probe-before")

	before := n.podContainers("old-small", "young-big")
	core, kubelet := n.CorePID(), n.PluginPID("eviction", "kubelet")
	if kubelet == 0 {
		t.Fatalf("no process runs microlet-eviction-kubelet; the core's children: %v", n.PluginProcesses())
	}
	plugins := []Plugin{
		{Kind: "cgroup", Name: "default", Body: fmt.Sprintf("kube_reserved = { memory = \"%d\" }", KubeReservedFor(t, 700*Mi))},
		{Kind: "eviction", Name: "priority", Body: softAllocatable},
		{Kind: "imagegc", Name: "lru"},
		{Kind: "stats", Name: "default"},
	}
	n.WriteConfig(plugins)
	n.Eventually("the priority strategy decides the cycles", func() (bool, string) {
		got, _ := n.Metric("microlet_eviction_cycles_total", map[string]string{"strategy": "priority", "trigger": "periodic"})
		return got > 0 && e2e.ProcessGone(kubelet), fmt.Sprintf("%v cycles by priority; kubelet strategy's process gone: %t", got, e2e.ProcessGone(kubelet))
	})
	n.expectMemoryPressure("probe-after")

	old := n.WaitPod("old-small", "evicted", Evicted)
	n.WaitStopped("old-small")
	if !strings.HasPrefix(old.Status.Message, "The node was low on resource: memory.") {
		t.Errorf("old-small's message %q does not name memory", old.Status.Message)
	}
	if p := n.Pod("young-big"); p == nil || !Running(p) {
		t.Errorf("young-big after the eviction: %s; the kubelet's ranking evicted it, want it running", describe(p))
	}
	if got, _ := n.Metric("microlet_eviction_cycles_total", map[string]string{"strategy": "builtin", "trigger": "periodic"}); got != 0 {
		t.Errorf("%v cycles fell to the built-in evictor during the switch, want none", got)
	}
	if got, _ := n.Metric("microlet_eviction_cycles_total", map[string]string{"strategy": "kubelet", "trigger": "periodic"}); got == 0 {
		t.Error("no cycle was decided by the kubelet strategy before the switch")
	}
	if n.CorePID() != core || e2e.ProcessGone(core) {
		t.Errorf("the core restarted: pid %d, was %d", n.CorePID(), core)
	}
	after := n.podContainers("old-small", "young-big")
	for name, id := range before {
		if after[name] != id {
			t.Errorf("pod %s's container changed from %s to %s: the pod restarted", name, id, after[name])
		}
	}
}

// expectMemoryPressure pushes a BestEffort pod named probe and expects it
// rejected for MemoryPressure, which is how the node's condition shows
// without an API server.
func (n *Node) expectMemoryPressure(probe string) {
	n.t.Helper()
	if p := n.probe(probe); p.Status.Phase != v1.PodFailed {
		n.t.Errorf("probe pod %s: %s, want rejected with reason Evicted under MemoryPressure", probe, DescribePod(p))
	}
}

// awaitMemoryPressure pushes BestEffort probe pods, one at a time, until
// one is rejected for MemoryPressure; admitted ones are deleted.
func (n *Node) awaitMemoryPressure(prefix string) {
	n.t.Helper()
	for i := 0; ; i++ {
		name := fmt.Sprintf("%s-%d", prefix, i)
		if p := n.probe(name); p.Status.Phase == v1.PodFailed {
			return
		}
		n.Delete(name)
		n.Eventually("probe pod "+name+" is gone", func() (bool, string) { return n.Pod(name) == nil, "still listed" })
		if i == 100 {
			n.t.Fatal("no MemoryPressure after 100 probe pods")
		}
	}
}

// probe pushes a BestEffort pod and returns it once it runs or is refused;
// a refusal must be for MemoryPressure.
func (n *Node) probe(name string) *v1.Pod {
	n.t.Helper()
	n.Push(PodSpec{Name: name, Script: WaitForTermination}.Manifest())
	p := n.WaitPod(name, "admitted or rejected", func(p *v1.Pod) bool { return Running(p) || p.Status.Phase == v1.PodFailed })
	if p.Status.Phase == v1.PodFailed && (p.Status.Reason != "Evicted" || !strings.Contains(p.Status.Message, "The node had condition: [MemoryPressure]")) {
		n.t.Errorf("probe pod %s: %s, want reason Evicted and MemoryPressure named", name, DescribePod(p))
	}
	return p
}

// podContainers maps each named pod to its container's status ID.
func (n *Node) podContainers(names ...string) map[string]string {
	n.t.Helper()
	out := map[string]string{}
	for _, name := range names {
		if p := n.Pod(name); p != nil && len(p.Status.ContainerStatuses) > 0 {
			out[name] = p.Status.ContainerStatuses[0].ContainerID
		}
	}
	return out
}
