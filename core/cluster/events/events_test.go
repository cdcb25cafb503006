package events

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes/fake"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/microlet/microlet/core/cluster/events/eventstest"
)

func testPod() *v1.Pod {
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "web-node1", Namespace: "default", UID: "static-hash"},
		Spec: v1.PodSpec{
			InitContainers: []v1.Container{{Name: "init"}},
			Containers:     []v1.Container{{Name: "app"}},
		},
	}
}

func TestContainerRef(t *testing.T) {
	for _, tc := range []struct{ container, fieldPath string }{
		{"app", "spec.containers{app}"},
		{"init", "spec.initContainers{init}"},
		{"gone", "spec.containers{gone}"},
	} {
		ref, err := ContainerRef(testPod(), tc.container)
		if err != nil {
			t.Fatal(err)
		}
		want := v1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: "default", Name: "web-node1", UID: "static-hash", FieldPath: tc.fieldPath}
		if *ref != want {
			t.Errorf("ContainerRef(%s) = %+v, want %+v", tc.container, *ref, want)
		}
	}
}

func TestRecordContainerReplacesTheContainerID(t *testing.T) {
	rec := record.NewFakeRecorder(1)
	rec.IncludeObject = true
	RecordContainer(rec, testPod(), "app", "0123abcd", v1.EventTypeWarning, FailedToStartContainer, "Error: container 0123abcd exited")
	got := <-rec.Events
	want := "Warning Failed Error: container app exited involvedObject{kind=Pod,apiVersion=v1}"
	if got != want {
		t.Errorf("event %q, want %q", got, want)
	}
}

func TestNopAndOrNop(t *testing.T) {
	Nop.Eventf(testPod(), v1.EventTypeNormal, "R", "m %d", 1) // must not panic
	if OrNop(nil) != Nop {
		t.Error("OrNop(nil) is not Nop")
	}
	rec := record.NewFakeRecorder(1)
	if OrNop(rec) != Recorder(rec) {
		t.Error("OrNop(r) is not r")
	}
}

func conditions(status ...v1.ConditionStatus) []v1.NodeCondition {
	types := []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure, v1.NodeReady}
	var out []v1.NodeCondition
	for i, s := range status {
		out = append(out, v1.NodeCondition{Type: types[i], Status: s})
	}
	return out
}

func TestConditionTransitions(t *testing.T) {
	F, T, U := v1.ConditionFalse, v1.ConditionTrue, v1.ConditionUnknown
	for _, tc := range []struct {
		name          string
		before, after []v1.NodeCondition
		want          []string
	}{
		{"registration: pressure conditions first seen, Ready not", nil, conditions(F, F, F, T), []string{
			"Normal NodeHasSufficientMemory Node node1 status is now: NodeHasSufficientMemory",
			"Normal NodeHasNoDiskPressure Node node1 status is now: NodeHasNoDiskPressure",
			"Normal NodeHasSufficientPID Node node1 status is now: NodeHasSufficientPID",
		}},
		{"nothing changed", conditions(F, F, F, T), conditions(F, F, F, T), nil},
		{"becomes ready", conditions(F, F, F, F), conditions(F, F, F, T), []string{"Normal NodeReady Node node1 status is now: NodeReady"}},
		{"not ready when unknown", conditions(F, F, F, T), conditions(F, F, F, U), []string{"Normal NodeNotReady Node node1 status is now: NodeNotReady"}},
		{"pressure", conditions(F, F, F, T), conditions(T, T, T, T), []string{
			"Normal NodeHasInsufficientMemory Node node1 status is now: NodeHasInsufficientMemory",
			"Normal NodeHasDiskPressure Node node1 status is now: NodeHasDiskPressure",
			"Normal NodeHasInsufficientPID Node node1 status is now: NodeHasInsufficientPID",
		}},
		{"pressure relieved", conditions(T, F, F, T), conditions(F, F, F, T), []string{"Normal NodeHasSufficientMemory Node node1 status is now: NodeHasSufficientMemory"}},
		{"unknown pressure records nothing", conditions(F), conditions(U), nil},
		{"other conditions record nothing", nil, []v1.NodeCondition{{Type: "NetworkUnavailable", Status: T}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := record.NewFakeRecorder(10)
			NewNode(rec, "node1").ConditionTransitions(tc.before, tc.after)
			got := eventstest.Drain(rec)
			if len(got) != len(tc.want) {
				t.Fatalf("events %q, want %q", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("event %d: %q, want %q", i, got[i], tc.want[i])
				}
			}
		})
	}
}

func TestNodeEvents(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	rec.IncludeObject = true
	n := NewNode(rec, "node1")
	n.Starting()
	n.BootID("", "b1")   // a new Node: no reboot
	n.BootID("b1", "b1") // same boot
	n.BootID("b0", "b1")
	n.BootID("b0", "b1") // once per run
	n.AllocatableEnforced("/kubepods", nil)
	n.AllocatableEnforced("/kubepods", errors.New("device busy"))
	want := []string{
		"Normal Starting Starting kubelet. involvedObject{kind=Node,apiVersion=}",
		"Warning Rebooted Node node1 has been rebooted, boot id: b1 involvedObject{kind=Node,apiVersion=}",
		"Normal NodeAllocatableEnforced Updated Node Allocatable limit across pods involvedObject{kind=Node,apiVersion=}",
		`Warning FailedNodeAllocatableEnforcement Failed to update Node Allocatable Limits "/kubepods": device busy involvedObject{kind=Node,apiVersion=}`,
	}
	got := eventstest.Drain(rec)
	if len(got) != len(want) {
		t.Fatalf("events %q, want %q", got, want)
	}
	for i := range got {
		if got[i] != want[i] {
			t.Errorf("event %d: %q, want %q", i, got[i], want[i])
		}
	}
}

// TestBroadcasterSendsCorrelatedEvents: events reach the API as the
// kubelet's (source kubelet on the node), and a repeated event is one
// Event whose count grows, not a new one (client-go's correlation).
func TestBroadcasterSendsCorrelatedEvents(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset()
	b := start(ctx, &corev1client.EventSinkImpl{Interface: client.CoreV1().Events("")}, "node1", hclog.NewNullLogger())
	defer b.Shutdown()
	n := NewNode(b.Recorder(), "node1")
	n.Starting()
	n.Starting()
	var got *v1.Event
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		list, err := client.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 || list.Items[0].Count != 2 {
			return false, err
		}
		got = &list.Items[0]
		return true, nil
	})
	if err != nil {
		t.Fatalf("no single Starting event counted twice: %v", err)
	}
	if got.Source != (v1.EventSource{Component: "kubelet", Host: "node1"}) || got.ReportingController != "kubelet" || got.ReportingInstance != "node1" {
		t.Errorf("source %+v, reporting %s/%s; want the kubelet on node1", got.Source, got.ReportingController, got.ReportingInstance)
	}
	if got.Reason != StartingKubelet || got.InvolvedObject.Kind != "Node" || got.InvolvedObject.Name != "node1" || got.InvolvedObject.UID != "node1" {
		t.Errorf("event %+v", got)
	}
}
