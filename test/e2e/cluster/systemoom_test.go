//go:build e2e && systemoom

package clustere2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/prometheus/procfs"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/microlet/microlet/internal/devnode"
	pressuree2e "github.com/microlet/microlet/test/e2e/pressure"
)

// TestSystemOOMEvent: a pod's hog fills the whole machine's memory, the
// kernel's OOM killer (a global OOM, not a cgroup's limit) kills it, and
// the node records the kubelet's SystemOOM event naming the victim's
// process and container.
//
// The machine really runs out of memory for a few seconds, so this test
// has a build tag of its own and `make test-e2e` runs it alone, after every
// other end-to-end package: a concurrent test's node would see
// memory.available near 0 and evict its pods. The hog is BestEffort
// (oom_score_adj 1000) with the largest resident set, so it is the
// kernel's victim; the node has no memory threshold, so that microlet's own
// eviction does not act first. Two dd processes each fill a buffer of 60%
// of the machine's memory, so neither allocation is more than the machine
// has (the kernel's heuristic overcommit refuses one that is).
func TestSystemOOMEvent(t *testing.T) {
	meminfo, err := procfs.NewDefaultFS()
	if err != nil {
		t.Fatal(err)
	}
	mi, err := meminfo.Meminfo()
	if err != nil || mi.MemTotal == nil {
		t.Fatalf("reading /proc/meminfo: %v", err)
	}
	if v, err := os.ReadFile("/proc/sys/vm/panic_on_oom"); err != nil || strings.TrimSpace(string(v)) != "0" {
		t.Fatalf("vm.panic_on_oom is %q (%v): a system OOM would panic this machine", v, err)
	}
	bufMiB := *mi.MemTotal * 6 / 10 / 1024 // MemTotal is in kB
	n := startNode(t, nodeOptions{Plugins: []pressuree2e.Plugin{
		{Kind: "cgroup", Name: "default"},
		pressuree2e.NoThresholdsKubelet,
		{Kind: "imagegc", Name: "lru"},
		{Kind: "stats", Name: "default"},
	}})
	waitReady(t, n, "")
	ns := testNamespace(t)
	fill := fmt.Sprintf("dd if=/dev/zero of=/dev/null bs=%dM count=1 iflag=fullblock", bufMiB)
	spec := apiPodSpec(n, v1.Container{Name: "hog", Image: devnode.DefaultTestImage,
		Command: []string{"sh", "-c", fill + " & " + fill + " & wait"}})
	spec.RestartPolicy = v1.RestartPolicyNever
	if _, err := cluster(t).Admin.CoreV1().Pods(ns).Create(context.Background(),
		&v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "hog"}, Spec: spec}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitAPIPod(t, n, ns, "hog", "Succeeded or Failed", func(p *v1.Pod) bool {
		return p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed
	})

	nodeEvents := func() []v1.Event {
		return listEvents(t, "default", "involvedObject.kind=Node,involvedObject.name="+n.Name)
	}
	waitForReasons(t, n, "the node's SystemOOM event", nodeEvents, "SystemOOM")
	want := ", container: " + ns + "/hog/hog"
	for _, e := range nodeEvents() {
		if e.Reason != "SystemOOM" {
			continue
		}
		if e.Type != v1.EventTypeWarning || !strings.HasPrefix(e.Message, "System OOM encountered, victim process: dd, pid: ") || !strings.HasSuffix(e.Message, want) {
			t.Errorf("SystemOOM event %s %q; want a warning \"System OOM encountered, victim process: dd, pid: <pid>%s\"", e.Type, e.Message, want)
		}
	}
	if kills, ok := n.Metric("microlet_oom_kills_total", map[string]string{"scope": "system"}); !ok || kills < 1 {
		t.Errorf("microlet_oom_kills_total{scope=system} = %v (present %t), want at least 1", kills, ok)
	}
}
