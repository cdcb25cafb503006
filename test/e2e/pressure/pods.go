//go:build e2e

package pressuree2e

import (
	"fmt"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/node/machine"
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
