package eviction

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/kinds/stats"
	"github.com/microlet/microlet/core/node/memnotify"
	"github.com/microlet/microlet/core/pluginhost"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// TestAdmission: under MemoryPressure only BestEffort pods are rejected,
// under DiskPressure every pod but critical ones; the plugin decides when it
// serves, the core's rule otherwise, with the same outcome for the kubelet's
// strategy.
func TestAdmission(t *testing.T) {
	bestEffort, burstable, critical := pod("be", "", ""), pod("burst", "10Mi", ""), staticPod("etcd")
	memoryPressure := sample(epoch, 8*Gi-10*Mi, 50*Gi, nil)
	diskPressure := sample(epoch, Gi, 5*Gi, nil)
	for _, plugin := range []string{"kubelet", "none"} {
		for _, tc := range []struct {
			name   string
			sample *stats.Sample
			admit  map[*v1.Pod]bool
		}{
			{"memory pressure", memoryPressure, map[*v1.Pod]bool{bestEffort: false, burstable: true, critical: true}},
			{"disk pressure", diskPressure, map[*v1.Pod]bool{bestEffort: false, burstable: false, critical: true}},
			{"no pressure", sample(epoch, Gi, 50*Gi, nil), map[*v1.Pod]bool{bestEffort: true, burstable: true, critical: true}},
		} {
			t.Run(plugin+"/"+tc.name, func(t *testing.T) {
				slot := &switchable{}
				if plugin == "none" {
					slot.set(nil, fmt.Errorf("no eviction plugin is configured: %w", pluginhost.ErrNotConfigured))
				} else {
					slot.set(servePlugin(t, plugin, nil), nil)
				}
				f := newFixture(t, slot, 1)
				f.stats.samples = []*stats.Sample{tc.sample}
				f.cycle()
				for p, want := range tc.admit {
					got := f.m.Admit(context.Background(), p, nil)
					if got.Admit != want {
						t.Errorf("%s: admit = %t (%s: %s), want %t", p.Name, got.Admit, got.Reason, got.Message, want)
					}
					if !got.Admit && (got.Reason != "Evicted" || got.Message == "") {
						t.Errorf("%s: rejected with reason %q message %q, want reason Evicted and the condition", p.Name, got.Reason, got.Message)
					}
				}
			})
		}
	}
}

// TestReservation: the plugin's reservation while it answers, its last one
// while it is down, the built-in thresholds without one.
func TestReservation(t *testing.T) {
	mem, disk := 8*Gi, 100*Gi
	capacity := &typesv1.ResourceList{MemoryBytes: &mem, EphemeralStorageBytes: &disk}
	slot := &switchable{}
	f := newFixture(t, slot, 1)
	check := func(what string, wantMemory, wantDisk int64) {
		t.Helper()
		got, err := f.m.Reservation(context.Background(), capacity)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		if got.GetMemoryBytes() != wantMemory || got.GetEphemeralStorageBytes() != wantDisk {
			t.Errorf("%s: reserved memory %d, disk %d; want %d, %d", what, got.GetMemoryBytes(), got.GetEphemeralStorageBytes(), wantMemory, wantDisk)
		}
	}
	builtinDisk := int64(10737418400) // 10% of 100Gi, as the kubelet computes it
	slot.set(nil, fmt.Errorf("no eviction plugin is configured: %w", pluginhost.ErrNotConfigured))
	check("no plugin configured", 100*Mi, builtinDisk)
	slot.set(nil, fmt.Errorf("%w: starting", pluginhost.ErrUnavailable))
	check("plugin starting, never answered", 100*Mi, builtinDisk)
	slot.set(servePlugin(t, "kubelet", map[string]any{"hard": []any{"memory.available<500Mi"}}), nil)
	check("plugin serving", 500*Mi, 0)
	slot.set(nil, fmt.Errorf("%w: restarting", pluginhost.ErrUnavailable))
	check("plugin restarting", 500*Mi, 0)
	slot.set(scriptedPlugin(t, nil), nil)
	check("plugin without the reservation capability", 100*Mi, builtinDisk)
}

// TestMemoryNotificationStartsCycle: a kernel notification runs a cycle at
// once, labelled as such, without waiting for the periodic tick.
func TestMemoryNotificationStartsCycle(t *testing.T) {
	f := newFixture(t, servePlugin(t, "kubelet", nil), 1)
	f.stats.samples = []*stats.Sample{sample(epoch, Gi, 50*Gi, nil)}
	f.run(t)
	f.notifier.events <- memnotify.Event{Cgroup: "", Source: "threshold"}
	f.waitCycles(t, "kubelet", "memory_notification", 1, 0, "after a memory notification")
}

// TestExceededRecheckWaits: the first look after a level is found passed
// comes soon (usage that outran the arming of a fresh level is caught within
// a fraction of a second), the next ones ever later up to once a second
// while it stays passed; once no level is, the next episode starts short
// again.
func TestExceededRecheckWaits(t *testing.T) {
	f := newFixture(t, servePlugin(t, "kubelet", nil), 1)
	f.notifier.setExceeded(`threshold "/kubepods" 123`)
	fires := func() time.Duration {
		t.Helper()
		c := f.m.recheck()
		if c == nil {
			t.Fatal("no recheck timed while a level is exceeded")
		}
		var waited time.Duration
		for step := 10 * time.Millisecond; ; waited += step {
			select {
			case <-c:
				return waited
			default:
			}
			if waited > 2*exceededRecheck {
				t.Fatalf("the recheck did not fire within %v", waited)
			}
			f.clock.Step(step)
		}
	}
	var got []time.Duration
	for range 6 {
		got = append(got, fires())
	}
	f.notifier.setExceeded()
	if f.m.recheck() != nil {
		t.Fatal("a recheck is timed while no level is exceeded")
	}
	f.notifier.setExceeded(`threshold "/kubepods" 456`)
	got = append(got, fires())
	ms := time.Millisecond
	want := []time.Duration{100 * ms, 200 * ms, 400 * ms, 800 * ms, 1000 * ms, 1000 * ms, 100 * ms}
	if !slices.Equal(got, want) {
		t.Errorf("recheck waits %v, want %v", got, want)
	}
}

// TestExceededLevelRechecks: while an armed usage level is already passed
// the kernel will not signal it again, so cycles run on the manager's own
// short timer, labelled as notification cycles, with no notification sent;
// with no level passed there is no such timer.
func TestExceededLevelRechecks(t *testing.T) {
	f := newFixture(t, servePlugin(t, "kubelet", nil), 1)
	f.stats.samples = []*stats.Sample{sample(epoch, Gi, 50*Gi, nil)}
	if f.m.recheck() != nil {
		t.Fatal("a recheck is timed while no level is exceeded")
	}
	f.notifier.setExceeded(`threshold "/kubepods" 123`)
	f.run(t)
	f.waitCycles(t, "kubelet", "memory_notification", 2, exceededRecheck/4, "while a level is exceeded")
}
