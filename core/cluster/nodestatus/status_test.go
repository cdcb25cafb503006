package nodestatus

import (
	"errors"
	"testing"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestSetStatusConditions(t *testing.T) {
	t1 := t0.Add(10e9)
	networkDown := errors.New("container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:no CNI config")
	tests := []struct {
		name string
		// before changes a registered healthy node; facts the new facts.
		before      func(n *v1.Node)
		facts       func(f *Facts)
		want        map[v1.NodeConditionType]v1.NodeCondition
		wantEvents  []string
		wantChanged bool
	}{{
		name:  "nothing changed: heartbeats only",
		facts: func(*Facts) {},
		want: map[v1.NodeConditionType]v1.NodeCondition{
			v1.NodeReady: {Status: v1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastTransitionTime: metav1.NewTime(t0)},
		},
	}, {
		name:  "runtime and network down: NotReady with both reasons",
		facts: func(f *Facts) { f.NotReady = []error{errRuntimeDown, networkDown} },
		want: map[v1.NodeConditionType]v1.NodeCondition{
			v1.NodeReady: {Status: v1.ConditionFalse, Reason: "KubeletNotReady",
				Message: "[" + errRuntimeDown.Error() + ", " + networkDown.Error() + "]", LastTransitionTime: metav1.NewTime(t1)},
		},
		wantEvents:  []string{"NodeNotReady"},
		wantChanged: true,
	}, {
		name:   "the node lifecycle controller set Unknown: Ready again is a transition",
		before: func(n *v1.Node) { setType(n, v1.NodeReady, v1.ConditionUnknown, "NodeStatusUnknown") },
		facts:  func(*Facts) {},
		want: map[v1.NodeConditionType]v1.NodeCondition{
			v1.NodeReady: {Status: v1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastTransitionTime: metav1.NewTime(t1)},
		},
		wantEvents:  []string{"NodeReady"},
		wantChanged: true,
	}, {
		name:  "memory pressure",
		facts: func(f *Facts) { f.MemoryPressure = true },
		want: map[v1.NodeConditionType]v1.NodeCondition{
			v1.NodeMemoryPressure: {Status: v1.ConditionTrue, Reason: "KubeletHasInsufficientMemory", Message: "kubelet has insufficient memory available", LastTransitionTime: metav1.NewTime(t1)},
			v1.NodeReady:          {Status: v1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastTransitionTime: metav1.NewTime(t0)},
		},
		wantEvents:  []string{"NodeHasInsufficientMemory"},
		wantChanged: true,
	}, {
		name:  "disk and PID pressure",
		facts: func(f *Facts) { f.DiskPressure, f.PIDPressure = true, true },
		want: map[v1.NodeConditionType]v1.NodeCondition{
			v1.NodeDiskPressure: {Status: v1.ConditionTrue, Reason: "KubeletHasDiskPressure", Message: "kubelet has disk pressure", LastTransitionTime: metav1.NewTime(t1)},
			v1.NodePIDPressure:  {Status: v1.ConditionTrue, Reason: "KubeletHasInsufficientPID", Message: "kubelet has insufficient PID available", LastTransitionTime: metav1.NewTime(t1)},
		},
		wantEvents:  []string{"NodeHasDiskPressure", "NodeHasInsufficientPID"},
		wantChanged: true,
	}, {
		name:  "capacity without cpu: NotReady as upstream",
		facts: func(f *Facts) { delete(f.Capacity, v1.ResourceCPU) },
		before: func(n *v1.Node) {
			delete(n.Status.Capacity, v1.ResourceCPU)
		},
		want: map[v1.NodeConditionType]v1.NodeCondition{
			v1.NodeReady: {Status: v1.ConditionFalse, Reason: "KubeletNotReady", Message: "missing node capacity for resources: cpu", LastTransitionTime: metav1.NewTime(t1)},
		},
		wantEvents:  []string{"NodeNotReady"},
		wantChanged: true,
	}, {
		name:        "rebooted",
		facts:       func(f *Facts) { f.BootID = "b2" },
		wantEvents:  []string{"Rebooted"},
		wantChanged: true,
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node, _ := InitialNode("node-a", Registration{}, readyFacts(), t0)
			if tt.before != nil {
				tt.before(node)
			}
			base := node.DeepCopy()
			f := readyFacts()
			tt.facts(&f)
			events := SetStatus(node, f, t1)
			var reasons []string
			for _, e := range events {
				reasons = append(reasons, e.Reason)
			}
			if diff := cmp.Diff(tt.wantEvents, reasons); diff != "" {
				t.Errorf("events (-want +got):\n%s", diff)
			}
			for typ, want := range tt.want {
				c, ok := findCondition(node, typ)
				if !ok {
					t.Fatalf("no %s condition", typ)
				}
				want.Type, want.LastHeartbeatTime = typ, metav1.NewTime(t1)
				if diff := cmp.Diff(want, *c); diff != "" {
					t.Errorf("%s (-want +got):\n%s", typ, diff)
				}
			}
			if got := StatusChanged(&base.Status, &node.Status); got != tt.wantChanged {
				t.Errorf("StatusChanged = %t, want %t", got, tt.wantChanged)
			}
		})
	}
}

func setType(n *v1.Node, typ v1.NodeConditionType, status v1.ConditionStatus, reason string) {
	c, _ := findCondition(n, typ)
	c.Status, c.Reason = status, reason
}

func TestSetStatusResources(t *testing.T) {
	node, _ := InitialNode("node-a", Registration{}, readyFacts(), t0)
	// Another agent advertises a cluster-level extended resource.
	node.Status.Capacity["example.com/dongle"] = resource.MustParse("3")
	f := readyFacts()
	f.DeviceCapacity, f.DeviceAllocatable = nil, nil
	f.RemovedDevices = []v1.ResourceName{"vendor.example/gpu"}
	delete(f.Capacity, "hugepages-2Mi")
	delete(f.Allocatable, "hugepages-2Mi")
	SetStatus(node, f, t0)

	wantCapacity := quantities("cpu", "2", "memory", "4Gi", "ephemeral-storage", "20Gi", "pods", "110",
		"vendor.example/gpu", "0", "example.com/dongle", "3")
	wantAllocatable := quantities("cpu", "1900m", "memory", "3Gi", "ephemeral-storage", "18Gi", "pods", "110",
		"vendor.example/gpu", "0", "example.com/dongle", "3")
	if diff := cmp.Diff(wantCapacity, node.Status.Capacity, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
		t.Errorf("capacity (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(wantAllocatable, node.Status.Allocatable, cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })); diff != "" {
		t.Errorf("allocatable (-want +got):\n%s", diff)
	}
}

func TestSchedulableEvent(t *testing.T) {
	tests := []struct {
		unschedulable, was bool
		want               string
	}{
		{unschedulable: true, was: false, want: "NodeNotSchedulable"},
		{unschedulable: false, was: true, want: "NodeSchedulable"},
		{unschedulable: true, was: true},
		{unschedulable: false, was: false},
	}
	for _, tt := range tests {
		node := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-a"}, Spec: v1.NodeSpec{Unschedulable: tt.unschedulable}}
		e, ok := schedulableEvent(node, tt.was)
		if ok != (tt.want != "") || e.Reason != tt.want {
			t.Errorf("unschedulable %t after %t: event %q (%t), want %q", tt.unschedulable, tt.was, e.Reason, ok, tt.want)
		}
		if ok && e.Message != "Node node-a status is now: "+tt.want {
			t.Errorf("message %q", e.Message)
		}
	}
}
