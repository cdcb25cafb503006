//go:build e2e

package pressuree2e

import (
	"strings"
	"testing"
)

// TestBuiltinEvictorWithoutEvictionPlugin: with no eviction plugin
// configured, the core's built-in evictor decides, with the kubelet's
// default hard thresholds (ARCHITECTURE.md, "Failure policy per kind"), and
// evicts a pod under memory pressure.
//
// Pods may use 700Mi; the default memory.available<100Mi holds 100Mi back,
// so allocatable is 600Mi and allocatableMemory.available<100Mi is met once
// the pods' cgroup's working set passes 500Mi. The hog stops at 570Mi, below the
// pods' 700Mi: no OOM is possible.
func TestBuiltinEvictorWithoutEvictionPlugin(t *testing.T) {
	t.Parallel()
	n := allocatableNode(t, 700*Mi, nil, nil)
	innocent := PodSpec{Name: "innocent", Script: WaitForTermination, MemoryRequest: "16Mi"}
	n.Push(innocent.Manifest())
	n.WaitPod(innocent.Name, "running", Running)
	n.Push(PodSpec{Name: "hog", Script: FillScript(10, 57, "0.2"), MemoryVolume: true}.Manifest())

	hog := n.WaitPod("hog", "evicted", Evicted)
	n.WaitStopped("hog")
	if !strings.HasPrefix(hog.Status.Message, "The node was low on resource: memory.") {
		t.Errorf("hog's message %q does not name memory", hog.Status.Message)
	}
	if got := n.Pod(innocent.Name); got == nil || !Running(got) || restarts(got) > 0 {
		t.Errorf("innocent pod after the eviction: %v, want it running, never restarted", describe(got))
	}
	n.expectEvictions("allocatableMemory.available", 1)
	if got, _ := n.Metric("microlet_eviction_cycles_total", map[string]string{"strategy": "builtin", "trigger": "periodic"}); got == 0 {
		t.Error("no eviction cycle was decided by the built-in evictor")
	}
	if logLine(n.Log(), "the built-in evictor decides") == "" {
		t.Error("the core never logged that the built-in evictor decides")
	}
	n.expectNoOOMKill("hog")
}
