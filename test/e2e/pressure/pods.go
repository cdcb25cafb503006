//go:build e2e

package pressuree2e

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/node/machine"
	"github.com/microlet/microlet/internal/prereq"
)

// Mi is a mebibyte.
const Mi = int64(1) << 20

// PodSpec is a pushed pod with one busybox container running script.
type PodSpec struct {
	Name string
	// Script is the container's sh script: WaitForTermination, or
	// FillScript, which stop at once when killed.
	Script string
	// MemoryRequest is a quantity ("64Mi"); "" for none (BestEffort).
	MemoryRequest string
	// Priority is spec.priority; nil for none.
	Priority *int32
	// Volume adds an emptyDir mounted at /data; MemoryVolume makes it a tmpfs.
	Volume, MemoryVolume bool
}

// WaitForTermination is a script that sleeps until SIGTERM and exits then.
// A shell runs its trap only once the foreground command ends, so the sleep
// runs in the background.
const WaitForTermination = onTerm + waitForever

const (
	onTerm      = "trap 'exit 0' TERM; "
	waitForever = "sleep 100000 & wait"
)

// FillScript writes stepMi MiB into /data every pause (a sleep argument),
// count times, then waits; it exits on SIGTERM throughout.
func FillScript(stepMi, count int, pause string) string {
	return fmt.Sprintf("%si=0; while [ $i -lt %d ]; do dd if=/dev/zero of=/data/f$i bs=1048576 count=%d 2>/dev/null; i=$((i+1)); sleep %s; done; %s",
		onTerm, count, stepMi, pause, waitForever)
}

// Manifest is the pod's YAML for Node.Push.
func (p PodSpec) Manifest() string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\n  namespace: default\nspec:\n", p.Name)
	b.WriteString("  restartPolicy: Never\n  terminationGracePeriodSeconds: 5\n")
	if p.Priority != nil {
		fmt.Fprintf(&b, "  priority: %d\n", *p.Priority)
	}
	fmt.Fprintf(&b, "  containers:\n  - name: app\n    image: IMAGE\n    command: [\"sh\", \"-c\", %q]\n", p.Script)
	if p.MemoryRequest != "" {
		fmt.Fprintf(&b, "    resources: {requests: {memory: %s}}\n", p.MemoryRequest)
	}
	if p.Volume || p.MemoryVolume {
		b.WriteString("    volumeMounts: [{name: data, mountPath: /data}]\n  volumes:\n  - name: data\n    emptyDir: {")
		if p.MemoryVolume {
			b.WriteString("medium: Memory")
		}
		b.WriteString("}\n")
	}
	return b.String()
}

// KubeReservedFor is the cgroup plugin's kube_reserved memory that leaves
// pods (the kubepods cgroup) podsMemory bytes of this machine's memory.
func KubeReservedFor(t testing.TB, podsMemory int64) int64 {
	t.Helper()
	capacity, err := machine.ReadCapacity(machine.Options{RootDir: "/", MaxPods: 110})
	if err != nil {
		t.Fatal(err)
	}
	return capacity.MemoryBytes - podsMemory
}

// Running is a pod whose phase is Running.
func Running(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning }

// Evicted is a pod the node evicted.
func Evicted(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodFailed && p.Status.Reason == "Evicted"
}

// ThrashScript is a hog that stalls on memory before it bursts: it writes
// fileMi MiB of files into /data (a disk emptyDir), reads them over and
// over in the background, and after thrashFor seconds allocates burstMi
// MiB at once (dd's buffer, in the container's main process). Files larger
// than what the pods' memory can cache keep the page cache thrashing:
// tasks wait for pages that were just thrown out (memory pressure stalls).
// The burst comes faster than any cycle: past the pods' memory it meets
// the kernel's OOM killer. It exits on SIGTERM until the burst.
func ThrashScript(fileMi, thrashFor, burstMi int) string {
	return fmt.Sprintf("%si=0; while [ $i -lt %d ]; do dd if=/dev/zero of=/data/f$i bs=1048576 count=10 2>/dev/null; i=$((i+1)); done; "+
		"(while true; do cat /data/f* > /dev/null; done) & sleep %d & wait $!; exec dd if=/dev/zero of=/dev/null bs=%dM count=1",
		onTerm, fileMi/10, thrashFor, burstMi)
}

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
// thresholds the kubelet strategy mostly evicts this hog too on this
// kernel: its thrashing page cache is re-activated on refault and counted
// in the working set. test/bench/pressure compares the strategies so
// configured.)
const (
	psiPodsMemory = 400 * Mi
	// psiLevels: no node level (other work on the machine would count),
	// the hog's own stall.
	psiLevels = "hard = []\nmemory_pressure = []\npod_memory_pressure = [\"some.avg10>3\"]"
)

// PSIHog is the hog of the PSI scenario, for the benchmark too. It is
// Burstable (8Mi requested), so that a node still under MemoryPressure
// from the last run admits it.
func PSIHog(name string) PodSpec {
	return PodSpec{Name: name, Script: ThrashScript(500, 40, 500), Volume: true, MemoryRequest: "8Mi"}
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
