package resize

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"

	"github.com/microlet/microlet/core/cluster/events/eventstest"
)

func pod(cpu, mem string) *v1.Pod {
	p := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "app", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)},
		Limits:   v1.ResourceList{v1.ResourceCPU: resource.MustParse(cpu), v1.ResourceMemory: resource.MustParse(mem)},
	}}}}}
	p.UID, p.Name, p.Namespace, p.Generation = types.UID("uid-1"), "p", "ns", 1
	return p
}

var allocatable = v1.ResourceList{v1.ResourceCPU: resource.MustParse("2"), v1.ResourceMemory: resource.MustParse("4Gi")}

func fits(ok bool, msg string) Fits { return func(*v1.Pod) (bool, string) { return ok, msg } }

func conditionTypes(cs []v1.PodCondition) map[v1.PodConditionType]v1.PodCondition {
	out := map[v1.PodConditionType]v1.PodCondition{}
	for _, c := range cs {
		out[c.Type] = c
	}
	return out
}

func running(string) bool { return true }

func TestResizeThatFits(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	m := New(rec)
	old := pod("100m", "64Mi")
	m.Admitted(old)
	m.SetActuated(old.UID, "app", old.Spec.Containers[0].Resources)
	if cs := m.Conditions(old, running); len(cs) != 0 {
		t.Fatalf("conditions before a resize: %v", cs)
	}
	resized := pod("200m", "128Mi")
	resized.Generation = 2
	if got := m.Resize(resized, allocatable, fits(true, "")); got != resized {
		t.Fatal("a resize that fits must be run as the spec says")
	}
	cs := conditionTypes(m.Conditions(resized, running))
	if c, ok := cs[v1.PodResizeInProgress]; !ok || c.ObservedGeneration != 2 || c.Reason != "" {
		t.Fatalf("conditions %v, want PodResizeInProgress of generation 2", cs)
	}
	res, alloc := m.ContainerResources(resized, &resized.Spec.Containers[0], true)
	if !res.Limits.Cpu().Equal(resource.MustParse("100m")) || !alloc.Cpu().Equal(resource.MustParse("200m")) {
		t.Errorf("status resources %v allocated %v: want the actuated 100m and the allocated 200m", res, alloc)
	}
	m.SetError(resized.UID, 2, "container app: boom")
	if c := conditionTypes(m.Conditions(resized, running))[v1.PodResizeInProgress]; c.Reason != ReasonError || c.Message != "container app: boom" {
		t.Errorf("after an error: %+v", c)
	}
	m.SetActuated(resized.UID, "app", resized.Spec.Containers[0].Resources)
	m.ClearError(resized.UID)
	if cs := m.Conditions(resized, running); len(cs) != 0 {
		t.Errorf("conditions once actuated: %v", cs)
	}
	want := `Normal ResizeCompleted Pod resize completed: {"containers":[{"name":"app","resources":{"limits":{"cpu":"200m","memory":"128Mi"},"requests":{"cpu":"200m","memory":"128Mi"}}}]}`
	if got := eventstest.Drain(rec); len(got) != 1 || got[0] != want {
		t.Errorf("events %q, want %q", got, want)
	}
	if res, _ := m.ContainerResources(resized, &resized.Spec.Containers[0], true); !res.Limits.Memory().Equal(resource.MustParse("128Mi")) {
		t.Errorf("status resources %v, want the new ones", res)
	}
}

func TestResizePending(t *testing.T) {
	for _, tc := range []struct {
		name           string
		resized        *v1.Pod
		fits           Fits
		staticCPUs     bool
		reason, detail string
	}{
		{name: "more cpu than the node", resized: pod("3", "64Mi"), fits: fits(true, ""),
			reason: ReasonInfeasible, detail: "Node didn't have enough capacity: cpu, requested: 3000, capacity: 2000"},
		{name: "more memory than the node", resized: pod("3", "5Gi"), fits: fits(true, ""),
			reason: ReasonInfeasible, detail: "Node didn't have enough capacity: memory, requested: 5368709120, capacity: 4294967296"},
		{name: "no room next to the others", resized: pod("1", "64Mi"), fits: fits(false, "Node didn't have enough resource: cpu, requested: 1000, used: 1500, capacity: 2000"),
			reason: ReasonDeferred, detail: "Node didn't have enough resource: cpu, requested: 1000, used: 1500, capacity: 2000"},
		{name: "a static pod", resized: func() *v1.Pod {
			p := pod("200m", "64Mi")
			p.Annotations = map[string]string{"kubernetes.io/config.source": "file"}
			return p
		}(), fits: fits(true, ""), reason: ReasonInfeasible, detail: "In-place resize of static-pods is not supported"},
		{name: "cpu of a Guaranteed pod under the static CPU policy", resized: pod("200m", "64Mi"), fits: fits(true, ""), staticCPUs: true,
			reason: ReasonInfeasible, detail: `Resize is infeasible for Guaranteed Pods alongside CPU Manager policy "static"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := New(nil)
			if tc.staticCPUs {
				m.StaticCPUPolicy = func() bool { return true }
			}
			old := pod("100m", "64Mi")
			old.Annotations = tc.resized.Annotations
			m.Admitted(old)
			m.SetActuated(old.UID, "app", old.Spec.Containers[0].Resources)
			got := m.Resize(tc.resized, allocatable, tc.fits)
			if !got.Spec.Containers[0].Resources.Limits.Cpu().Equal(resource.MustParse("100m")) {
				t.Errorf("the node runs %v, want the allocated 100m", got.Spec.Containers[0].Resources)
			}
			if tc.resized.Spec.Containers[0].Resources.Limits.Cpu().Equal(resource.MustParse("100m")) {
				t.Error("the pod's spec was changed")
			}
			cs := conditionTypes(m.Conditions(tc.resized, running))
			c, ok := cs[v1.PodResizePending]
			if !ok || c.Reason != tc.reason || c.Message != tc.detail {
				t.Errorf("PodResizePending %+v, want %s %q", c, tc.reason, tc.detail)
			}
			if _, ok := cs[v1.PodResizeInProgress]; ok {
				t.Error("a pending resize is not in progress")
			}
			deferred := len(m.PendingDeferred()) == 1
			if deferred != (tc.reason == ReasonDeferred) {
				t.Errorf("PendingDeferred %v", m.PendingDeferred())
			}
			// Asking for the allocated resources again clears it.
			m.Resize(old, allocatable, fits(true, ""))
			if cs := m.Conditions(old, running); len(cs) != 0 {
				t.Errorf("conditions after going back: %v", cs)
			}
		})
	}
}

func TestPendingTransitionTimeKeptWhileReasonStays(t *testing.T) {
	m := New(nil)
	clock := time.Unix(1000, 0)
	m.now = func() time.Time { return clock }
	old := pod("100m", "64Mi")
	m.Admitted(old)
	m.Resize(pod("1", "64Mi"), allocatable, fits(false, "no room"))
	first := conditionTypes(m.Conditions(old, running))[v1.PodResizePending]
	clock = clock.Add(time.Minute)
	m.Resize(pod("1", "64Mi"), allocatable, fits(false, "no room"))
	second := conditionTypes(m.Conditions(old, running))[v1.PodResizePending]
	if !second.LastTransitionTime.Equal(&first.LastTransitionTime) || second.LastProbeTime.Equal(&first.LastProbeTime) {
		t.Errorf("first %+v second %+v: the transition time stays, the probe time moves", first, second)
	}
}

func TestNotRunningContainersAreNotInProgress(t *testing.T) {
	m := New(nil)
	old := pod("100m", "64Mi")
	m.Admitted(old)
	m.Resize(pod("200m", "64Mi"), allocatable, fits(true, ""))
	if cs := m.Conditions(old, func(string) bool { return false }); len(cs) != 0 {
		t.Errorf("conditions %v: a container that does not run is sized when it starts", cs)
	}
}

func TestSidecarsAreResizableInitContainersNot(t *testing.T) {
	always := v1.ContainerRestartPolicyAlways
	if !Resizable(&v1.Container{RestartPolicy: &always}, true) || Resizable(&v1.Container{}, true) || !Resizable(&v1.Container{}, false) {
		t.Error("sidecars and regular containers are resizable, plain init containers are not")
	}
}

func TestUnknownActuationAfterARestart(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	m := New(rec)
	p := pod("100m", "64Mi")
	m.Admitted(p) // the core restarted: nothing actuated is known
	if cs := m.Conditions(p, running); len(cs) != 0 {
		t.Errorf("conditions %v: an unknown actuation alone is no resize", cs)
	}
	resized := pod("200m", "64Mi")
	m.Resize(resized, allocatable, fits(true, ""))
	if _, ok := conditionTypes(m.Conditions(resized, running))[v1.PodResizeInProgress]; !ok {
		t.Error("an accepted resize not yet actuated is in progress")
	}
	m.SetActuated(resized.UID, "app", resized.Spec.Containers[0].Resources)
	if cs := m.Conditions(resized, running); len(cs) != 0 {
		t.Errorf("conditions once actuated: %v", cs)
	}
	if got := eventstest.Drain(rec); len(got) != 1 {
		t.Errorf("events %q, want one ResizeCompleted", got)
	}
}

// TestStaticCPUPolicyAllowsMemoryResize: under the static CPU policy only a
// Guaranteed pod's cpu is fixed; its memory resizes as anywhere.
func TestStaticCPUPolicyAllowsMemoryResize(t *testing.T) {
	m := New(nil)
	m.StaticCPUPolicy = func() bool { return true }
	old := pod("1", "64Mi")
	m.Admitted(old)
	m.SetActuated(old.UID, "app", old.Spec.Containers[0].Resources)
	resized := pod("1", "128Mi")
	if got := m.Resize(resized, allocatable, fits(true, "")); got != resized {
		t.Fatalf("a memory resize under the static CPU policy was held: %v", m.Conditions(resized, running))
	}
}

// TestStaticMemoryPolicyHoldsMemoryResize: under the Static memory policy
// a Guaranteed pod's memory is pinned; a resize of it is infeasible with
// upstream's message, and its cpu resizes as anywhere.
func TestStaticMemoryPolicyHoldsMemoryResize(t *testing.T) {
	m := New(nil)
	m.StaticMemoryPolicy = func() bool { return true }
	old := pod("1", "64Mi")
	m.Admitted(old)
	m.SetActuated(old.UID, "app", old.Spec.Containers[0].Resources)
	resized := pod("1", "128Mi")
	if got := m.Resize(resized, allocatable, fits(true, "")); got == resized {
		t.Fatal("a memory resize under the Static memory policy was allocated")
	}
	cs := m.Conditions(resized, running)
	if len(cs) != 1 || cs[0].Reason != ReasonInfeasible || cs[0].Message != memoryManagerInfeasible {
		t.Fatalf("conditions %v, want PodResizePending Infeasible with upstream's message", cs)
	}
	cpu := pod("2", "64Mi")
	if got := m.Resize(cpu, allocatable, fits(true, "")); got != cpu {
		t.Fatalf("a cpu resize under the Static memory policy was held: %v", m.Conditions(cpu, running))
	}
}
