//go:build e2e

package pressuree2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/node/machine"
	"github.com/microlet/microlet/internal/prereq"
)

// The PSI scenario (docs/eviction.md, "The psi strategy"): pods may use
// 400Mi. The hog (ThrashScript) writes 500Mi of files and reads them in a
// loop, more than the pods' cgroup can cache: it stalls on memory (its
// memory.pressure "some" avg10 measured 6-40 % on this 2-core VM). After
// 40 s it allocates 500Mi at once, more than the pods may use, which only
// the kernel's OOM killer can stop.
//
// Both strategies run without the kubelet's memory thresholds (hard = []),
// so that the test shows what PSI adds: the burst is too fast for any
// cycle, and only the stall before it gives warning. (With the kubelet's
// thresholds the kubelet strategy evicts this hog too on this kernel: its
// thrashing page cache is re-activated on refault and counted in the
// working set. test/bench/pressure compares the strategies so configured.)
const (
	psiPodsMemory = 400 * Mi
	// psiLevels: no node level (other work on the machine would count),
	// the hog's own stall.
	psiLevels = "hard = []\nmemory_pressure = []\npod_memory_pressure = [\"some.avg10>3\"]"
)

// PSIHog is the hog of the PSI scenario, for the benchmark too.
func PSIHog(name string) PodSpec {
	return PodSpec{Name: name, Script: ThrashScript(500, 40, 500), Volume: true}
}

// PSIPodsMemory is what the scenario's pods may use, for the benchmark.
const PSIPodsMemory = psiPodsMemory

// PSIStrategy and NoThresholdsKubelet are the eviction blocks the
// scenario compares.
var (
	PSIStrategy         = Plugin{Kind: "eviction", Name: "psi", Body: psiLevels}
	NoThresholdsKubelet = Plugin{Kind: "eviction", Name: "kubelet", Body: "hard = []"}
)

// RequirePodPSI fails (under CI=true; skips elsewhere) when pods have no
// memory.pressure here: a kernel without PSI, or no unified hierarchy.
func RequirePodPSI(t testing.TB) {
	t.Helper()
	cg, err := machine.DetectCgroups()
	if err != nil {
		t.Fatal(err)
	}
	if cg.Unified == "" {
		prereq.Missing(t, "a unified cgroup hierarchy (v2, or mounted beside v1) for pods' memory.pressure")
	}
	if _, err := os.Stat(filepath.Join(cg.Unified, "memory.pressure")); err != nil {
		prereq.Missing(t, "pressure stall information in the kernel (psi=1): %v", err)
	}
}

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

// OOMKilled is a pod one of whose containers the kernel's OOM killer
// ended, as its status says.
func OOMKilled(p *v1.Pod) bool {
	for _, c := range p.Status.ContainerStatuses {
		for _, st := range []v1.ContainerState{c.State, c.LastTerminationState} {
			if st.Terminated != nil && st.Terminated.Reason == "OOMKilled" {
				return true
			}
		}
	}
	return false
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
