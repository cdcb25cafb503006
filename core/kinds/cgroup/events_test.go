package cgroup

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/microlet/microlet/core/cluster/events"
	"github.com/microlet/microlet/core/cluster/events/eventstest"
)

// TestNodeAllocatableEnforcedOnce: the first applied node plan is
// upstream's NodeAllocatableEnforced on the node, and later ones record
// nothing.
func TestNodeAllocatableEnforcedOnce(t *testing.T) {
	cg := fakeV2Tree(t, "/kubepods", "/kubepods/burstable", "/kubepods/besteffort")
	rec := record.NewFakeRecorder(10)
	m, err := New(Options{Plugin: servePlanner(t, nil), Capacity: testCapacity(), Cgroups: cg, Logger: testLogger(t, &logBuffer{}),
		NodeEvents: events.NewNode(rec, "node1")})
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if err := m.UpdatePods(t.Context(), []*v1.Pod{testPod("b1", [2]string{"cpu=1", ""})}); err != nil {
			t.Fatal(err)
		}
	}
	want := "Normal NodeAllocatableEnforced Updated Node Allocatable limit across pods"
	if got := eventstest.Drain(rec); len(got) != 1 || got[0] != want {
		t.Errorf("events %q, want one %q", got, want)
	}
}
