package eviction

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/microlet/microlet/core/cluster/events/eventstest"
	"github.com/microlet/microlet/core/kinds/stats"
)

// TestEvictionEvents: a cycle that evicts records EvictionThresholdMet on
// the node and Evicted, with the strategy's message and annotations, on
// the pod, as upstream's eviction manager.
func TestEvictionEvents(t *testing.T) {
	hog, quiet := pod("hog", "100Mi", ""), pod("quiet", "100Mi", "")
	plugin := servePlugin(t, "kubelet", map[string]any{"hard": []any{"memory.available<1Gi"}})
	f := newFixture(t, plugin, 1, hog, quiet)
	rec := record.NewFakeRecorder(10)
	rec.IncludeObject = true
	f.m.opts.Events, f.m.opts.NodeName = rec, "node1"
	f.stats.samples = []*stats.Sample{sample(epoch, 7500*Mi, 50*Gi, map[*v1.Pod]int64{hog: 3 * Gi, quiet: 50 * Mi})}
	f.cycle()

	got := eventstest.Drain(rec)
	if len(got) != 2 {
		t.Fatalf("events %q, want EvictionThresholdMet and Evicted", got)
	}
	if want := "Warning EvictionThresholdMet Attempting to reclaim memory involvedObject{kind=Node,apiVersion=}"; got[0] != want {
		t.Errorf("event %q, want %q", got[0], want)
	}
	kill := f.pods.killed()[0]
	if want := "Warning Evicted " + kill.status.Message; !strings.HasPrefix(got[1], want) || !strings.Contains(got[1], "starved_resource:memory") {
		t.Errorf("event %q, want %q with the strategy's annotations", got[1], want)
	}
}

// TestNoEventsWithoutPressure: a cycle that does nothing records nothing.
func TestNoEventsWithoutPressure(t *testing.T) {
	p := pod("p", "100Mi", "")
	plugin := servePlugin(t, "kubelet", map[string]any{"hard": []any{"memory.available<1Gi"}})
	f := newFixture(t, plugin, 1, p)
	rec := record.NewFakeRecorder(10)
	f.m.opts.Events = rec
	f.stats.samples = []*stats.Sample{sample(epoch.Add(time.Second), Gi, 50*Gi, map[*v1.Pod]int64{p: 50 * Mi})}
	f.cycle()
	if got := eventstest.Drain(rec); len(got) != 0 {
		t.Errorf("events %q, want none", got)
	}
}

func TestSignalResource(t *testing.T) {
	for signal, want := range map[string]string{
		"memory.available": "memory", "allocatableMemory.available": "memory",
		"nodefs.available": "ephemeral-storage", "imagefs.available": "ephemeral-storage", "containerfs.available": "ephemeral-storage",
		"nodefs.inodesFree": "inodes", "imagefs.inodesFree": "inodes", "pid.available": "pids", "custom.signal": "custom.signal",
	} {
		if got := signalResource(signal); got != want {
			t.Errorf("signalResource(%s) = %s, want %s", signal, got, want)
		}
	}
}
