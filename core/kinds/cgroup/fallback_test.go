package cgroup

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/microlet/microlet/core/pluginhost"
	"github.com/microlet/microlet/plugins/cgroup/planner"
	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/sdktest"
)

const noPluginLine = "no cgroup plugin is configured"

func reserve100Mi(context.Context, *typesv1.ResourceList) (*typesv1.ResourceList, error) {
	memory := 100 * Mi
	return &typesv1.ResourceList{MemoryBytes: &memory}, nil
}

// No cgroup plugin: pods run on the runtime's defaults, every pod is
// admitted, allocatable is capacity less the eviction reservation, and the
// log says so once, until a plugin shows up and goes again.
func TestWithoutACgroupPlugin(t *testing.T) {
	for name, plugin := range map[string]func(*switchPlugin) Plugin{
		"never configured":        func(*switchPlugin) Plugin { return nil },
		"removed from the config": func(p *switchPlugin) Plugin { p.set(absent); return p },
	} {
		t.Run(name, func(t *testing.T) {
			cg := fakeV2Tree(t, "/kubepods", "/kubepods/burstable", "/kubepods/besteffort")
			sw := servePlanner(t, nil)
			logs := &logBuffer{}
			m, err := New(Options{Plugin: plugin(sw), Capacity: testCapacity(), Cgroups: cg, EvictionReservation: reserve100Mi, Logger: testLogger(t, logs)})
			if err != nil {
				t.Fatal(err)
			}
			ctx := t.Context()
			pod := guaranteed("g", "1", "1Gi")
			for range 2 {
				if err := m.UpdatePods(ctx, []*v1.Pod{pod}); err != nil {
					t.Fatal(err)
				}
				plan, err := m.PlanPod(ctx, pod)
				if err != nil || plan.CgroupParent != "" || len(plan.Containers) != 0 || plan.Sandbox != nil {
					t.Fatalf("PlanPod = %+v, %v; want an empty plan", plan, err)
				}
				if d, err := m.Admit(ctx, testPod("big", [2]string{"cpu=64", ""}), []*v1.Pod{pod}); err != nil || !d.Admit {
					t.Errorf("Admit = %+v, %v; want admitted", d, err)
				}
			}
			alloc := m.Allocatable()
			if memory, pods := alloc[v1.ResourceMemory], alloc[v1.ResourcePods]; memory.Value() != 4*Gi-100*Mi || pods.Value() != 110 {
				t.Errorf("Allocatable = %v", alloc)
			}
			if _, err := os.Stat(filepath.Join(cg.Unified, "kubepods/podg")); !errors.Is(err, os.ErrNotExist) {
				t.Errorf("a pod cgroup was made without a plugin: %v", err)
			}
			if n := logs.count(noPluginLine); n != 1 {
				t.Errorf("logged %q %d times, want once", noPluginLine, n)
			}
			if plugin(sw) == nil {
				return
			}
			// The plugin comes and goes: the planned pod keeps its plan, and
			// the absence is logged again.
			sw.set(serving)
			planned, err := m.PlanPod(ctx, pod)
			if err != nil || planned.CgroupParent != "/kubepods/podg" {
				t.Fatalf("PlanPod with the plugin = %+v, %v", planned, err)
			}
			sw.set(absent)
			kept, err := m.PlanPod(ctx, pod)
			if err != nil || kept != planned {
				t.Errorf("PlanPod after the plugin went = %+v, %v; want the last plan", kept, err)
			}
			if n := logs.count(noPluginLine); n != 2 {
				t.Errorf("logged %q %d times, want twice", noPluginLine, n)
			}
		})
	}
}

// The plugin goes down and comes back: running pods keep their plans and
// cgroups, new pods wait (ErrUnavailable), admission says "ask again", the
// node keeps its last allocatable.
func TestPluginDownAndBack(t *testing.T) {
	cg := fakeV2Tree(t, "/kubepods", "/kubepods/burstable", "/kubepods/besteffort")
	sw := servePlanner(t, map[string]any{"kube_reserved": map[string]any{"cpu": "500m"}})
	m, err := New(Options{Plugin: sw, Capacity: testCapacity(), Cgroups: cg, Logger: testLogger(t, &logBuffer{})})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	running, newcomer := guaranteed("run", "500m", "1Gi"), guaranteed("new", "500m", "1Gi")
	if err := m.UpdatePods(ctx, []*v1.Pod{running}); err != nil {
		t.Fatal(err)
	}
	planned, err := m.PlanPod(ctx, running)
	if err != nil {
		t.Fatal(err)
	}
	allocatable := m.Allocatable()

	sw.set(down)
	// The pod cgroup vanished meanwhile: the last plan makes it again.
	podDir := filepath.Join(cg.Unified, planned.CgroupParent)
	if err := os.RemoveAll(podDir); err != nil {
		t.Fatal(err)
	}
	kept, err := m.PlanPod(ctx, running)
	if err != nil || kept != planned {
		t.Fatalf("PlanPod of a running pod while the plugin is down = %+v, %v; want its last plan", kept, err)
	}
	if got := readFile(t, filepath.Join(podDir, "memory.max")); got != "1073741824" {
		t.Errorf("the re-made pod cgroup's memory.max = %s", got)
	}
	_, err = m.PlanPod(ctx, newcomer)
	if !errors.Is(err, pluginhost.ErrUnavailable) || !strings.Contains(err.Error(), "pod default/pod-new waits for the cgroup plugin") {
		t.Errorf("PlanPod of a new pod while the plugin is down = %v; want it to wait (ErrUnavailable)", err)
	}
	if d, err := m.Admit(ctx, newcomer, []*v1.Pod{running}); !errors.Is(err, pluginhost.ErrUnavailable) || d.Admit || d.Reason != "" {
		t.Errorf("Admit while the plugin is down = %+v, %v; want neither admitted nor rejected", d, err)
	}
	if err := m.UpdatePods(ctx, []*v1.Pod{running, newcomer}); !errors.Is(err, pluginhost.ErrUnavailable) {
		t.Errorf("UpdatePods while the plugin is down = %v; want ErrUnavailable", err)
	}
	if got := m.Allocatable(); !equalResources(got, allocatable) {
		t.Errorf("Allocatable while the plugin is down = %v, want the last %v", got, allocatable)
	}
	if cpu := allocatable[v1.ResourceCPU]; cpu.MilliValue() != 1500 {
		t.Errorf("allocatable cpu = %s, want 1500m", cpu.String())
	}

	sw.set(serving)
	if d, err := m.Admit(ctx, newcomer, []*v1.Pod{running}); err != nil || !d.Admit {
		t.Errorf("Admit after the plugin is back = %+v, %v", d, err)
	}
	if plan, err := m.PlanPod(ctx, newcomer); err != nil || plan.CgroupParent != "/kubepods/podnew" {
		t.Errorf("PlanPod after the plugin is back = %+v, %v", plan, err)
	}
}

func equalResources(a, b v1.ResourceList) bool {
	if len(a) != len(b) {
		return false
	}
	for name, q := range a {
		if other, ok := b[name]; !ok || q.Cmp(other) != 0 {
			return false
		}
	}
	return true
}

// scriptedPlanner plans like the default planner, except that a test may
// change or refuse its PlanPod answers; it does no admission.
type scriptedPlanner struct {
	inner planner.Plugin
	mu    sync.Mutex
	edit  func(*cgroupv1.PlanPodResponse) (*cgroupv1.PlanPodResponse, error)
}

func (s *scriptedPlanner) Configure(ctx context.Context, cfg *planner.Config, h *sdk.Host) error {
	return s.inner.Configure(ctx, cfg, h)
}

func (s *scriptedPlanner) PlanPod(ctx context.Context, req *cgroupv1.PlanPodRequest) (*cgroupv1.PlanPodResponse, error) {
	resp, err := s.inner.PlanPod(ctx, req)
	s.mu.Lock()
	edit := s.edit
	s.mu.Unlock()
	if err != nil || edit == nil {
		return resp, err
	}
	return edit(resp)
}

func (s *scriptedPlanner) PlanNode(ctx context.Context, req *cgroupv1.PlanNodeRequest) (*cgroupv1.PlanNodeResponse, error) {
	return s.inner.PlanNode(ctx, req)
}

func (s *scriptedPlanner) script(edit func(*cgroupv1.PlanPodResponse) (*cgroupv1.PlanPodResponse, error)) {
	s.mu.Lock()
	s.edit = edit
	s.mu.Unlock()
}

// What the plugin answers decides: "retry later" makes a new pod wait, a
// wrong or refused plan is an error naming the problem, and a pod with a
// plan keeps it through both. A plugin without admission admits.
func TestPluginAnswers(t *testing.T) {
	cg := fakeV2Tree(t, "/kubepods", "/kubepods/burstable", "/kubepods/besteffort")
	sp := &scriptedPlanner{}
	h := sdktest.InProcess(t, pluginInfo, sp)
	if err := h.Configure(nil); err != nil {
		t.Fatal(err)
	}
	m, err := New(Options{Plugin: &switchPlugin{client: h.Cgroup()}, Capacity: testCapacity(), Cgroups: cg, Logger: testLogger(t, &logBuffer{})})
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	planned := guaranteed("old", "1", "1Gi")
	first, err := m.PlanPod(ctx, planned)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := m.Admit(ctx, testPod("huge", [2]string{"cpu=100", ""}), nil); err != nil || !d.Admit {
		t.Errorf("Admit by a plugin without admission = %+v, %v; want admitted", d, err)
	}

	tests := []struct {
		name        string
		edit        func(*cgroupv1.PlanPodResponse) (*cgroupv1.PlanPodResponse, error)
		unavailable bool
		message     string
	}{
		{"retry later", func(*cgroupv1.PlanPodResponse) (*cgroupv1.PlanPodResponse, error) {
			return nil, sdk.Retryable("busy")
		}, true, "busy"},
		{"refused", func(*cgroupv1.PlanPodResponse) (*cgroupv1.PlanPodResponse, error) {
			return nil, sdk.Invalid("no such thing")
		}, false, "no such thing"},
		{"a relative cgroup", func(r *cgroupv1.PlanPodResponse) (*cgroupv1.PlanPodResponse, error) {
			r.CgroupParent = "kubepods/x"
			return r, nil
		}, false, `cgroup_parent: "kubepods/x", expected a clean absolute path`},
		{"an unknown container", func(r *cgroupv1.PlanPodResponse) (*cgroupv1.PlanPodResponse, error) {
			r.Containers[0].Name = "ghost"
			return r, nil
		}, false, `it plans container "ghost", which the pod does not have`},
		{"shares out of range", func(r *cgroupv1.PlanPodResponse) (*cgroupv1.PlanPodResponse, error) {
			shares := uint64(1)
			r.PodResources.CpuShares = &shares
			return r, nil
		}, false, "pod_resources: cpu_shares is 1, expected 2 to 262144"},
		{"an unknown QoS class", func(r *cgroupv1.PlanPodResponse) (*cgroupv1.PlanPodResponse, error) {
			r.QosClass = "Platinum"
			return r, nil
		}, false, `qos_class "Platinum"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sp.script(tt.edit)
			t.Cleanup(func() { sp.script(nil) })
			_, err := m.PlanPod(ctx, guaranteed("new", "1", "1Gi"))
			if err == nil || errors.Is(err, pluginhost.ErrUnavailable) != tt.unavailable || !strings.Contains(err.Error(), tt.message) {
				t.Errorf("PlanPod = %v; want an error containing %q, unavailable %v", err, tt.message, tt.unavailable)
			}
			if kept, err := m.PlanPod(ctx, planned); err != nil || kept != first {
				t.Errorf("PlanPod of the planned pod = %+v, %v; want its last plan", kept, err)
			}
		})
	}
}

// Admission through the plugin: upstream's reasons and messages, against
// the allocatable of the node plan, which Admit makes when none exists.
func TestAdmit(t *testing.T) {
	cg := fakeV2Tree(t, "/kubepods", "/kubepods/burstable", "/kubepods/besteffort")
	m, err := New(Options{Plugin: servePlanner(t, map[string]any{"system_reserved": map[string]any{"cpu": "200m"}}),
		Capacity: testCapacity(), Cgroups: cg, Logger: testLogger(t, &logBuffer{})})
	if err != nil {
		t.Fatal(err)
	}
	admitted := []*v1.Pod{guaranteed("a", "1", "1Gi")}
	d, err := m.Admit(t.Context(), testPod("b", [2]string{"cpu=1", ""}), admitted)
	want := Decision{Reason: "OutOfcpu", Message: "Node didn't have enough resource: cpu, requested: 1000, used: 1000, capacity: 1800"}
	if err != nil || d != want {
		t.Errorf("Admit = %+v, %v\nwant %+v", d, err, want)
	}
	if d, err := m.Admit(t.Context(), testPod("c", [2]string{"cpu=800m", ""}), admitted); err != nil || !d.Admit {
		t.Errorf("Admit of a pod that fits = %+v, %v", d, err)
	}
	alloc := m.Allocatable()
	if cpu := alloc[v1.ResourceCPU]; cpu.Cmp(resource.MustParse("1800m")) != 0 {
		t.Errorf("Allocatable cpu = %s", cpu.String())
	}
}

// A node plan the plugin refuses (reservations beyond capacity, which stop
// the kubelet from starting) rejects pods with the plugin's reason.
func TestAdmitWithoutANodePlan(t *testing.T) {
	cg := fakeV2Tree(t, "/kubepods", "/kubepods/burstable", "/kubepods/besteffort")
	m, err := New(Options{Plugin: servePlanner(t, map[string]any{"kube_reserved": map[string]any{"memory": "5Gi"}}),
		Capacity: testCapacity(), Cgroups: cg, Logger: testLogger(t, &logBuffer{})})
	if err != nil {
		t.Fatal(err)
	}
	if err := m.UpdatePods(t.Context(), nil); err == nil {
		t.Error("UpdatePods accepted a node plan the plugin refused")
	}
	d, err := m.Admit(t.Context(), testPod("p", [2]string{"", ""}), nil)
	if err != nil || d.Admit || d.Reason != ReasonUnexpectedAdmissionError ||
		!strings.Contains(d.Message, `Resource "memory" has a reservation of 5Gi but capacity of 4Gi`) {
		t.Errorf("Admit = %+v, %v", d, err)
	}
}
