//go:build e2e

package clustere2e

import (
	"context"
	"fmt"
	"os"
	"path"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/microlet/microlet/internal/devnode"
)

// TestInPlaceResize: `kubectl patch pod --subresource resize` on pods of a
// microlet node, as the kubelet v1.34 handles it. A resize that fits
// changes the container's and the pod's cgroup limits (read from the
// cgroup files) without a restart, and the status shows the new resources
// with no resize condition left; one asking for more cpu than the node has
// is PodResizePending / Infeasible with upstream's message and changes
// nothing; one that does not fit next to another pod is Deferred, and done
// once that pod is deleted; the kubelet's ResizeCompleted event says what
// the pod got; a memory change with resizePolicy
// RestartContainer restarts the container with its new limit.
func TestInPlaceResize(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/sys/fs/cgroup/cgroup.controllers"); err == nil {
		t.Skip("the cgroup files read here are cgroup v1's; this machine runs v2")
	}
	n := startReadyNode(t)
	ns := testNamespace(t)
	pods := cluster(t).Admin.CoreV1().Pods(ns)
	resources := func(cpuReq, memReq, cpuLim, memLim string) v1.ResourceRequirements {
		return v1.ResourceRequirements{
			Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpuReq), v1.ResourceMemory: resource.MustParse(memReq)},
			Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpuLim), v1.ResourceMemory: resource.MustParse(memLim)},
		}
	}
	create := func(name string, r v1.ResourceRequirements, policy []v1.ContainerResizePolicy) {
		spec := apiPodSpec(n, v1.Container{Name: "app", Image: devnode.DefaultTestImage, Command: []string{"sleep", "100000"},
			Resources: r, ResizePolicy: policy})
		if _, err := pods.Create(context.Background(), &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", name, err)
		}
	}
	patch := func(name, cpuReq, memReq, cpuLim, memLim string) {
		kubectl(t, "patch", "pod", name, "-n", ns, "--subresource", "resize", "-p",
			fmt.Sprintf(`{"spec":{"containers":[{"name":"app","resources":{"requests":{"cpu":%q,"memory":%q},"limits":{"cpu":%q,"memory":%q}}}]}}`,
				cpuReq, memReq, cpuLim, memLim))
	}
	running := func(name string) *v1.Pod {
		return waitAPIPod(t, n, ns, name, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	}
	node := apiNode(t, n)
	allocatableCPU := node.Status.Allocatable.Cpu().MilliValue()

	create("fits", resources("100m", "32Mi", "200m", "64Mi"), nil)
	create("infeasible", resources("100m", "32Mi", "200m", "64Mi"), nil)
	create("deferred", resources("100m", "32Mi", "200m", "64Mi"), nil)
	create("restart", resources("100m", "32Mi", "200m", "64Mi"),
		[]v1.ContainerResizePolicy{{ResourceName: v1.ResourceMemory, RestartPolicy: v1.RestartContainer}})
	// The hog leaves less cpu than the deferred pod will ask for.
	create("hog", v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: *resource.NewMilliQuantity(allocatableCPU-600, resource.DecimalSI)}}, nil)
	for _, name := range []string{"fits", "infeasible", "deferred", "restart", "hog"} {
		running(name)
	}
	before := running("fits")

	patch("fits", "200m", "64Mi", "400m", "128Mi")
	patch("infeasible", fmt.Sprintf("%dm", allocatableCPU+1000), "32Mi", fmt.Sprintf("%dm", allocatableCPU+1000), "64Mi")
	patch("deferred", "1", "32Mi", "1", "64Mi")
	patch("restart", "100m", "48Mi", "200m", "96Mi")

	t.Run("group", func(t *testing.T) {
		t.Run("fits", func(t *testing.T) {
			t.Parallel()
			p := waitAPIPod(t, n, ns, "fits", "resized, no resize condition", func(p *v1.Pod) bool {
				return resizedTo(p, "200m", "64Mi", "400m", "128Mi") && !hasCondition(p, v1.PodResizePending) && !hasCondition(p, v1.PodResizeInProgress)
			})
			cs, old := p.Status.ContainerStatuses[0], before.Status.ContainerStatuses[0]
			if cs.ContainerID != old.ContainerID || cs.RestartCount != 0 {
				t.Errorf("container %s (restarts %d), want %s not restarted", cs.ContainerID, cs.RestartCount, old.ContainerID)
			}
			if got := cs.AllocatedResources; !got.Cpu().Equal(resource.MustParse("200m")) || !got.Memory().Equal(resource.MustParse("64Mi")) {
				t.Errorf("allocatedResources %v, want the new requests", got)
			}
			// The cgroup files, the container's seen from inside it.
			for file, want := range map[string]string{
				"/sys/fs/cgroup/memory/memory.limit_in_bytes": "134217728",
				"/sys/fs/cgroup/cpu/cpu.cfs_quota_us":         "40000",
				"/sys/fs/cgroup/cpu/cpu.shares":               "204",
			} {
				if got := strings.TrimSpace(execIn(t, n, p.UID, "cat", file)); got != want {
					t.Errorf("container %s: %s, want %s", file, got, want)
				}
			}
			// The pod cgroup holds the sum of its containers' limits.
			podCgroup := path.Dir(containerCgroup(t, n, p.UID, "memory"))
			if got := readCgroupFile(t, "memory", podCgroup, "memory.limit_in_bytes"); got != "134217728" {
				t.Errorf("pod cgroup %s memory.limit_in_bytes %s, want 134217728", podCgroup, got)
			}
			waitForReasons(t, n, "the resize's event", podEvents(t, p), "ResizeCompleted")
			for _, e := range podEvents(t, p)() {
				if e.Reason == "ResizeCompleted" && !strings.HasPrefix(e.Message, `Pod resize completed: {"containers":[{"name":"app","resources":{"limits":{"cpu":"400m","memory":"128Mi"}`) {
					t.Errorf("ResizeCompleted %q", e.Message)
				}
			}
		})
		t.Run("infeasible", func(t *testing.T) {
			t.Parallel()
			p := waitAPIPod(t, n, ns, "infeasible", "PodResizePending / Infeasible", func(p *v1.Pod) bool { return hasCondition(p, v1.PodResizePending) })
			c := condition(p, v1.PodResizePending)
			want := fmt.Sprintf("Node didn't have enough capacity: cpu, requested: %d, capacity: %d", allocatableCPU+1000, allocatableCPU)
			if c.Reason != v1.PodReasonInfeasible || c.Message != want {
				t.Errorf("PodResizePending %s %q, want Infeasible %q", c.Reason, c.Message, want)
			}
			if !resizedTo(p, "100m", "32Mi", "200m", "64Mi") {
				t.Errorf("status resources %v, want the old ones", p.Status.ContainerStatuses[0].Resources)
			}
			if got := strings.TrimSpace(execIn(t, n, p.UID, "cat", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us")); got != "20000" {
				t.Errorf("cpu.cfs_quota_us %s, want the old 20000", got)
			}
		})
		t.Run("deferred", func(t *testing.T) {
			t.Parallel()
			p := waitAPIPod(t, n, ns, "deferred", "PodResizePending / Deferred", func(p *v1.Pod) bool { return hasCondition(p, v1.PodResizePending) })
			if c := condition(p, v1.PodResizePending); c.Reason != v1.PodReasonDeferred || !strings.HasPrefix(c.Message, "Node didn't have enough resource: cpu, requested: 1000, ") {
				t.Errorf("PodResizePending %s %q, want Deferred with the admission's message", c.Reason, c.Message)
			}
			if err := pods.Delete(context.Background(), "hog", metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil {
				t.Fatal(err)
			}
			p = waitAPIPod(t, n, ns, "deferred", "resized once the hog left", func(p *v1.Pod) bool {
				return resizedTo(p, "1", "32Mi", "1", "64Mi") && !hasCondition(p, v1.PodResizePending) && !hasCondition(p, v1.PodResizeInProgress)
			})
			if got := strings.TrimSpace(execIn(t, n, p.UID, "cat", "/sys/fs/cgroup/cpu/cpu.cfs_quota_us")); got != "100000" {
				t.Errorf("cpu.cfs_quota_us %s, want 100000", got)
			}
		})
		t.Run("restart", func(t *testing.T) {
			t.Parallel()
			p := waitAPIPod(t, n, ns, "restart", "restarted with the new memory", func(p *v1.Pod) bool {
				return resizedTo(p, "100m", "48Mi", "200m", "96Mi") && p.Status.ContainerStatuses[0].RestartCount == 1 &&
					p.Status.ContainerStatuses[0].State.Running != nil
			})
			if got := strings.TrimSpace(execIn(t, n, p.UID, "cat", "/sys/fs/cgroup/memory/memory.limit_in_bytes")); got != "100663296" {
				t.Errorf("memory.limit_in_bytes %s, want 100663296", got)
			}
		})
	})
}

// resizedTo: the container's status resources are these.
func resizedTo(p *v1.Pod, cpuReq, memReq, cpuLim, memLim string) bool {
	if len(p.Status.ContainerStatuses) != 1 || p.Status.ContainerStatuses[0].Resources == nil {
		return false
	}
	r := p.Status.ContainerStatuses[0].Resources
	return r.Requests.Cpu().Equal(resource.MustParse(cpuReq)) && r.Requests.Memory().Equal(resource.MustParse(memReq)) &&
		r.Limits.Cpu().Equal(resource.MustParse(cpuLim)) && r.Limits.Memory().Equal(resource.MustParse(memLim))
}

// hasCondition says whether p's condition of type t is True.
func hasCondition(p *v1.Pod, t v1.PodConditionType) bool { return condition(p, t) != nil }

// condition is p's condition of type t if it is True, else nil.
func condition(p *v1.Pod, t v1.PodConditionType) *v1.PodCondition {
	for i := range p.Status.Conditions {
		if c := &p.Status.Conditions[i]; c.Type == t && c.Status == v1.ConditionTrue {
			return c
		}
	}
	return nil
}

// containerCgroup is the pod's container's cgroup in a v1 controller, as
// its /proc/1/cgroup says (v1 has no cgroup namespace here: host paths).
func containerCgroup(t *testing.T, n *clusterNode, uid types.UID, controller string) string {
	t.Helper()
	for _, line := range strings.Split(execIn(t, n, uid, "cat", "/proc/1/cgroup"), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		for _, c := range strings.Split(parts[1], ",") {
			if c == controller {
				return parts[2]
			}
		}
	}
	t.Fatalf("no %s cgroup in the container's /proc/1/cgroup", controller)
	return ""
}

func readCgroupFile(t *testing.T, controller, cgroup, file string) string {
	t.Helper()
	b, err := os.ReadFile(path.Join("/sys/fs/cgroup", controller, cgroup, file))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}
