package events

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
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

func TestNodeEvents(t *testing.T) {
	rec := record.NewFakeRecorder(10)
	rec.IncludeObject = true
	n := NewNode(rec, "node1")
	n.Starting()
	n.AllocatableEnforced("/kubepods", nil)
	n.AllocatableEnforced("/kubepods", errors.New("device busy"))
	want := []string{
		"Normal Starting Starting kubelet. involvedObject{kind=Node,apiVersion=}",
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

// failingSink is an API server that cannot be reached.
type failingSink struct{}

func (failingSink) Create(*v1.Event) (*v1.Event, error) { return nil, errors.New("connection refused") }
func (failingSink) Update(*v1.Event) (*v1.Event, error) { return nil, errors.New("connection refused") }
func (failingSink) Patch(*v1.Event, []byte) (*v1.Event, error) {
	return nil, errors.New("connection refused")
}

// TestSendFailuresLogAtDebug: client-go's line for an event it could not
// send goes to the agent's log at debug level, not to stderr.
func TestSendFailuresLogAtDebug(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var out syncBuffer
	log := hclog.New(&hclog.LoggerOptions{Output: &out, Level: hclog.Debug})
	b := start(ctx, failingSink{}, "node1", log)
	defer b.Shutdown()
	NewNode(b.Recorder(), "node1").Starting()
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		return strings.Contains(out.String(), "[DEBUG] Unable to write event"), nil
	})
	if err != nil {
		t.Errorf("no debug line for the failed event: %v\n%s", err, out.String())
	}
}

// syncBuffer is a bytes.Buffer safe for the logger's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}
