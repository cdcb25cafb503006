//go:build e2e

package pressuree2e

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestPSIEvictsBeforeTheOOMKiller: with the psi strategy the thrashing hog
// is evicted (Failed, Evicted, signal memory.pressure) before its burst,
// and the kernel's OOM killer never acts; the innocent pod runs on.
func TestPSIEvictsBeforeTheOOMKiller(t *testing.T) {
	t.Parallel()
	RequirePodPSI(t)
	n := allocatableNode(t, psiPodsMemory, &PSIStrategy, nil)
	innocent := PodSpec{Name: "innocent", Script: WaitForTermination, MemoryRequest: "16Mi"}
	n.Push(innocent.Manifest())
	n.WaitPod(innocent.Name, "running", Running)
	n.Push(PSIHog("hog").Manifest())

	hog := n.WaitPod("hog", "evicted or failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if !Evicted(hog) {
		t.Fatalf("the hog failed without being evicted: %s", DescribePod(hog))
	}
	n.WaitStopped("hog")
	if !strings.Contains(hog.Status.Message, "memory pressure some avg10") {
		t.Errorf("hog's message %q does not name the pressure stall", hog.Status.Message)
	}
	n.expectEvictions("memory.pressure", 1)
	n.expectNoOOMKill("hog")
	n.expectNoOOMKill(innocent.Name)
	if p := n.Pod(innocent.Name); p == nil || !Running(p) {
		t.Errorf("innocent pod after the eviction: %s, want it running", describe(p))
	}
}

// TestKubeletStrategyLetsTheOOMKillerAct: the same hog on the same node
// with the kubelet strategy and the same (no) memory thresholds: nothing
// evicts it, and its burst is OOM-killed (OOMKilled), which shows the
// burst is one the psi strategy's eviction prevented.
func TestKubeletStrategyLetsTheOOMKillerAct(t *testing.T) {
	t.Parallel()
	RequirePodPSI(t)
	n := allocatableNode(t, psiPodsMemory, &NoThresholdsKubelet, nil)
	n.Push(PSIHog("hog").Manifest())

	hog := n.WaitPod("hog", "failed", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodFailed })
	if Evicted(hog) {
		t.Fatalf("the kubelet strategy evicted the hog: %s", DescribePod(hog))
	}
	if !OOMKilled(hog) {
		t.Fatalf("the hog failed, but not by the OOM killer: %s", DescribePod(hog))
	}
	n.expectNoEvictions()
}

// expectNoEvictions fails the test if the node counted any eviction.
func (n *Node) expectNoEvictions() {
	n.t.Helper()
	for _, signal := range []string{"memory.pressure", "allocatableMemory.available", "memory.available"} {
		if got, _ := n.Metric("kubelet_evictions", map[string]string{"eviction_signal": signal}); got != 0 {
			n.t.Errorf("kubelet_evictions{eviction_signal=%q} = %v, want 0", signal, got)
		}
	}
}
