package syncloop

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/microlet/microlet/core/pods/podconfig"
	"github.com/microlet/microlet/core/pods/podspec"
	"github.com/microlet/microlet/core/pods/resize"
)

// withCPU is the pod from the API (resizable) with its container's cpu.
func withCPU(pod *v1.Pod, cpu string) *v1.Pod {
	p := pod.DeepCopy()
	p.Annotations[podspec.ConfigSourceAnnotationKey] = "api"
	l := v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu)}
	p.Spec.Containers[0].Resources = v1.ResourceRequirements{Requests: l, Limits: l}
	return p
}

func syncedCPU(h *harness, pod *v1.Pod) string {
	synced := h.runtime.synced(pod.UID)
	if len(synced) == 0 {
		return ""
	}
	return synced[len(synced)-1].Spec.Containers[0].Resources.Limits.Cpu().String()
}

// runningResizable is a harness whose node has 4 cpus, resizes on, and a
// running API pod "web" with 100m cpu.
func runningResizable(t *testing.T) (*harness, *v1.Pod) {
	t.Helper()
	h := newHarness(t, 10)
	resizes := resize.New(nil)
	h.loop.opts.Resizes = resizes
	h.loop.opts.Allocatable = func() v1.ResourceList { return v1.ResourceList{v1.ResourceCPU: resource.MustParse("4")} }
	h.loop.opts.Generator.Resizes = resizes

	pod := withCPU(h.newPod("web", v1.RestartPolicyAlways), "100m")
	h.send(podconfig.OpAdd, pod)
	h.waitPhase(pod, v1.PodRunning)
	return h, pod
}

func resizePending(h *harness, pod *v1.Pod) *v1.PodCondition {
	st, _ := h.status(pod)
	for i := range st.Conditions {
		if st.Conditions[i].Type == v1.PodResizePending {
			return &st.Conditions[i]
		}
	}
	return nil
}

// TestDeferredResizeRunsOnceItFits: a resize the admitters refuse next to
// the other pods is Deferred; the pod keeps running at its allocation
// until a later housekeeping finds room, then it is synced at its new
// resources.
func TestDeferredResizeRunsOnceItFits(t *testing.T) {
	h, pod := runningResizable(t)

	h.admitter.set(Admission{Reason: "OutOfcpu", Message: "Node didn't have enough resource: cpu, requested: 3000, used: 2000, capacity: 4000"})
	bigger := withCPU(pod, "3")
	h.send(podconfig.OpUpdate, bigger)
	eventually(t, "the resize Deferred", func() bool {
		h.loop.syncKnown(pod.UID)
		c := resizePending(h, pod)
		return c != nil && c.Reason == resize.ReasonDeferred && c.Message == "Node didn't have enough resource: cpu, requested: 3000, used: 2000, capacity: 4000"
	})
	if got := syncedCPU(h, pod); got != "100m" {
		t.Errorf("the runtime was asked for cpu %s, want the allocated 100m", got)
	}

	h.admitter.set(Admission{Admit: true})
	h.loop.housekeeping(h.ctx)
	eventually(t, "the pod synced at its new cpu", func() bool {
		h.loop.syncKnown(pod.UID)
		return syncedCPU(h, pod) == "3" && resizePending(h, pod) == nil
	})
}

// TestInfeasibleResizeBeyondTheNode: more cpu than the node's allocatable
// is Infeasible without asking the admitters.
func TestInfeasibleResizeBeyondTheNode(t *testing.T) {
	h, pod := runningResizable(t)
	h.admitter.mu.Lock()
	asked := len(h.admitter.asked)
	h.admitter.mu.Unlock()
	h.send(podconfig.OpUpdate, withCPU(pod, "5"))
	eventually(t, "the resize Infeasible", func() bool {
		h.loop.syncKnown(pod.UID)
		c := resizePending(h, pod)
		return c != nil && c.Reason == resize.ReasonInfeasible && c.Message == "Node didn't have enough capacity: cpu, requested: 5000, capacity: 4000"
	})
	h.admitter.mu.Lock()
	defer h.admitter.mu.Unlock()
	if len(h.admitter.asked) != asked {
		t.Errorf("the admitters were asked about an infeasible resize")
	}
	if got := syncedCPU(h, pod); got != "100m" {
		t.Errorf("the runtime was asked for cpu %s, want the allocated 100m", got)
	}
}
