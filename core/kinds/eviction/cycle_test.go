package eviction

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/kinds/stats"
	"github.com/microlet/microlet/core/node/memnotify"
	"github.com/microlet/microlet/core/pluginhost"
	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	"github.com/microlet/microlet/sdk"
)

// TestReclaimThenEvict: under nodefs pressure the strategy asks for
// container then image GC; the core runs both, asks again on fresh stats,
// and evicts only if the pressure held.
func TestReclaimThenEvict(t *testing.T) {
	small, big := pod("small", "", ""), pod("big", "", "")
	for _, tc := range []struct {
		name string
		// after is the nodefs free space once reclaim ran.
		after   int64
		evicted []types.UID
	}{
		{"reclaim was not enough: a pod goes", 5 * Gi, []types.UID{big.UID}},
		{"reclaim relieved the node: nobody goes", 50 * Gi, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plugin := servePlugin(t, "kubelet", map[string]any{"hard": []any{"nodefs.available<10%"}})
			f := newFixture(t, plugin, 1, small, big)
			f.reclaimer.freed = 123
			use := map[*v1.Pod]int64{small: 10 * Mi, big: 20 * Mi}
			f.stats.samples = append(f.stats.samples, sample(epoch, Gi, 5*Gi, use), sample(epoch.Add(time.Second), Gi, tc.after, use))
			f.cycle()

			want := []string{"containers remove_all=true", fmt.Sprintf("images bytes_to_free=%d", uint64(math.MaxUint64))}
			if !slices.Equal(f.reclaimer.calls, want) {
				t.Errorf("reclaim calls %v, want %v", f.reclaimer.calls, want)
			}
			if f.stats.calls != 2 {
				t.Errorf("stats sampled %d times, want twice (before and after reclaim)", f.stats.calls)
			}
			if got := f.pods.killedUIDs(); !slices.Equal(got, tc.evicted) {
				t.Fatalf("evicted %v, want %v", got, tc.evicted)
			}
			if got := conditionStatus(f.m.Conditions())["DiskPressure"]; got != "True" {
				t.Errorf("DiskPressure %q, want True (the threshold was met this cycle)", got)
			}
		})
	}
}

// TestEvictedStatus: an evicted pod ends Failed, reason Evicted, with the
// strategy's message and a DisruptionTarget condition; the metric counts
// the eviction by signal.
func TestEvictedStatus(t *testing.T) {
	hog, quiet := pod("hog", "100Mi", ""), pod("quiet", "100Mi", "")
	plugin := servePlugin(t, "kubelet", map[string]any{"hard": []any{"memory.available<1Gi"}})
	f := newFixture(t, plugin, 1, hog, quiet)
	f.stats.samples = []*stats.Sample{sample(epoch, 7500*Mi, 50*Gi, map[*v1.Pod]int64{hog: 3 * Gi, quiet: 50 * Mi})}
	f.cycle()

	kills := f.pods.killed()
	if len(kills) != 1 || kills[0].uid != hog.UID {
		t.Fatalf("kills %+v, want the hog alone", kills)
	}
	k := kills[0]
	if k.grace != minGracePeriodSeconds {
		t.Errorf("grace %d, want %d (hard threshold)", k.grace, minGracePeriodSeconds)
	}
	if k.status.Phase != v1.PodFailed || k.status.Reason != "Evicted" || !strings.HasPrefix(k.status.Message, "The node was low on resource: memory.") {
		t.Errorf("status %s/%s %q, want Failed/Evicted with the memory message", k.status.Phase, k.status.Reason, k.status.Message)
	}
	disrupted := false
	for _, c := range k.status.Conditions {
		disrupted = disrupted || (c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue && c.Reason == v1.PodReasonTerminationByKubelet)
	}
	if !disrupted {
		t.Errorf("conditions %+v lack DisruptionTarget=True (TerminationByKubelet)", k.status.Conditions)
	}
	if got := f.evictions("memory.available"); got != 1 {
		t.Errorf("kubelet_evictions{eviction_signal=memory.available} = %v, want 1", got)
	}
	if got := f.cycles("kubelet"); got != 1 {
		t.Errorf("cycles by kubelet = %v, want 1", got)
	}
	// The strategy's notification levels are armed: capacity - threshold
	// + inactive file (0 here) on the root.
	if len(f.notifier.armed) != 1 || !slices.Contains(f.notifier.armed[0], memnotify.Threshold{Cgroup: "", UsageBytes: uint64(7 * Gi)}) {
		t.Errorf("armed %v, want the root at 7Gi", f.notifier.armed)
	}
}

// TestCoreKeepsTheFinalSay: whatever the strategy answers, the core evicts
// at most MaxPodsPerCycle active, non-critical pods, each with at least the
// minimum grace period.
func TestCoreKeepsTheFinalSay(t *testing.T) {
	critical, a, b, c := staticPod("etcd"), pod("a", "", ""), pod("b", "", ""), pod("c", "", "")
	evictions := []*evictionv1.Eviction{
		{PodUid: string(critical.UID), Signal: "memory.available", GracePeriodSeconds: 30, Message: "m"},
		{PodUid: "not-a-pod", Signal: "memory.available", Message: "m"},
		{PodUid: string(a.UID), Signal: "memory.available", GracePeriodSeconds: 0, Message: "m"},
		{PodUid: string(b.UID), Signal: "memory.available", GracePeriodSeconds: 30, Message: ""},
		{PodUid: string(c.UID), Signal: "memory.available", GracePeriodSeconds: 5, Message: "m"},
	}
	for _, tc := range []struct {
		maxPods int
		want    []kill
	}{
		{1, []kill{{uid: a.UID, grace: 1}}},
		{2, []kill{{uid: a.UID, grace: 1}, {uid: b.UID, grace: 30}}},
		{10, []kill{{uid: a.UID, grace: 1}, {uid: b.UID, grace: 30}, {uid: c.UID, grace: 5}}},
	} {
		t.Run(fmt.Sprintf("at most %d", tc.maxPods), func(t *testing.T) {
			plugin := scriptedPlugin(t, &evictionv1.SynchronizeResponse{Evictions: evictions})
			f := newFixture(t, plugin, tc.maxPods, critical, a, b, c)
			f.stats.samples = []*stats.Sample{sample(epoch, Gi, 50*Gi, nil)}
			f.cycle()
			kills := f.pods.killed()
			if len(kills) != len(tc.want) {
				t.Fatalf("kills %+v, want %+v", kills, tc.want)
			}
			for i, k := range kills {
				if k.uid != tc.want[i].uid || k.grace != tc.want[i].grace {
					t.Errorf("kill %d: %s with grace %d, want %s with grace %d", i, k.uid, k.grace, tc.want[i].uid, tc.want[i].grace)
				}
				if k.uid == b.UID && k.status.Message != "The node was low on resource: memory.available. " {
					t.Errorf("an eviction without a message got %q", k.status.Message)
				}
			}
		})
	}
}

// TestBuiltinWhenPluginDown: without a serving plugin the built-in evictor
// applies the kubelet's default hard thresholds, with its ranking.
func TestBuiltinWhenPluginDown(t *testing.T) {
	for name, down := range map[string]error{
		"not configured": fmt.Errorf("no eviction plugin is configured: %w", pluginhost.ErrNotConfigured),
		"restarting":     fmt.Errorf("%w: plugin eviction/kubelet is restarting", pluginhost.ErrUnavailable),
	} {
		t.Run(name, func(t *testing.T) {
			within, over := pod("within", "1Gi", ""), pod("over", "10Mi", "")
			slot := &switchable{}
			slot.set(nil, down)
			f := newFixture(t, slot, 1, within, over)
			// 50Mi available: below the default memory.available<100Mi.
			f.stats.samples = []*stats.Sample{sample(epoch, 8*Gi-50*Mi, 50*Gi, map[*v1.Pod]int64{within: 900 * Mi, over: 200 * Mi})}
			f.cycle()
			if got := f.pods.killedUIDs(); !slices.Equal(got, []types.UID{over.UID}) {
				t.Fatalf("evicted %v, want the pod over its request (the kubelet's ranking)", got)
			}
			if msg := f.pods.killed()[0].status.Message; !strings.Contains(msg, "Threshold quantity: 100Mi") {
				t.Errorf("message %q does not name the default threshold", msg)
			}
			if got := f.cycles(builtinName); got != 1 {
				t.Errorf("cycles by the built-in evictor = %v, want 1", got)
			}
			if got := conditionStatus(f.m.Conditions()); got["MemoryPressure"] != "True" || got["DiskPressure"] != "False" {
				t.Errorf("conditions %v, want MemoryPressure True and DiskPressure False", got)
			}
		})
	}
}

// TestPluginErrorDecidesNothing: a plugin that serves but fails is not
// replaced by the built-in evictor, whose thresholds are not the operator's.
func TestPluginErrorDecidesNothing(t *testing.T) {
	p := pod("p", "", "")
	f := newFixture(t, failingPlugin(t, sdk.Invalid("the strategy has a bug")), 1, p)
	// Below the built-in memory.available<100Mi.
	f.stats.samples = []*stats.Sample{sample(epoch, 8*Gi-10*Mi, 50*Gi, map[*v1.Pod]int64{p: Gi})}
	f.cycle()
	if got := f.pods.killedUIDs(); len(got) > 0 {
		t.Errorf("evicted %v after the plugin failed", got)
	}
	if got := f.cycles(builtinName); got != 0 {
		t.Errorf("the built-in evictor ran %v cycles for a plugin that serves", got)
	}
}

// TestConditionsKeptWhilePluginDown: the plugin's pressure conditions stay
// while it does not serve; the built-in evictor may raise others; the
// plugin's next answer replaces them.
func TestConditionsKeptWhilePluginDown(t *testing.T) {
	p := pod("p", "1Gi", "")
	slot := &switchable{}
	// A strategy with an operator's threshold the defaults do not have.
	slot.set(servePlugin(t, "kubelet", map[string]any{"hard": []any{"memory.available<2Gi"}, "pressure_transition_period": "0s"}), nil)
	f := newFixture(t, slot, 1, p)
	step := func(d time.Duration, ws, nodefsFree int64) map[string]string {
		f.clock.SetTime(epoch.Add(d))
		f.stats.samples = []*stats.Sample{sample(epoch.Add(d), ws, nodefsFree, map[*v1.Pod]int64{p: 100 * Mi})}
		f.cycle()
		return conditionStatus(f.m.Conditions())
	}
	if got := step(0, 7*Gi, 50*Gi); got["MemoryPressure"] != "True" {
		t.Fatalf("with the plugin: %v, want MemoryPressure True", got)
	}
	slot.set(nil, fmt.Errorf("%w: restarting", pluginhost.ErrUnavailable))
	// The node's memory recovered, but the built-in thresholds cannot tell
	// the operator's from it; its own disk threshold is met.
	got := step(10*time.Second, Gi, 5*Gi)
	if got["MemoryPressure"] != "True" || got["DiskPressure"] != "True" || got["PIDPressure"] != "False" {
		t.Errorf("plugin down: %v, want MemoryPressure kept True, DiskPressure True from the built-in evictor, PIDPressure False", got)
	}
	slot.set(servePlugin(t, "kubelet", map[string]any{"hard": []any{"memory.available<2Gi"}, "pressure_transition_period": "0s"}), nil)
	if got := step(20*time.Second, Gi, 50*Gi); got["MemoryPressure"] != "False" || got["DiskPressure"] != "False" {
		t.Errorf("plugin back, no pressure: %v, want every condition False", got)
	}
}

// TestStatePerStrategy: the plugin gets back its own state, the built-in
// evictor its own, so a plugin's grace clocks survive its outage.
func TestStatePerStrategy(t *testing.T) {
	p := pod("p", "1Gi", "")
	slot := &switchable{}
	soft := map[string]any{"hard": []any{}, "soft": []any{"memory.available<2Gi"}, "soft_grace_period": []any{"memory.available=30s"}}
	slot.set(servePlugin(t, "kubelet", soft), nil)
	f := newFixture(t, slot, 1, p)
	step := func(d time.Duration) {
		f.clock.SetTime(epoch.Add(d))
		f.stats.samples = []*stats.Sample{sample(epoch.Add(d), 7*Gi, 50*Gi, map[*v1.Pod]int64{p: 2 * Gi})}
		f.cycle()
	}
	step(0) // the soft threshold is first met
	slot.set(nil, fmt.Errorf("%w: restarting", pluginhost.ErrUnavailable))
	step(10 * time.Second)
	// Another process of the strategy (a restart, or a swap to another
	// strategy) continues the clock from the state the core hands it.
	slot.set(servePlugin(t, "priority", soft), nil)
	step(20 * time.Second)
	if got := f.pods.killedUIDs(); len(got) > 0 {
		t.Fatalf("evicted %v before the grace period ran out", got)
	}
	step(31 * time.Second)
	if got := f.pods.killedUIDs(); !slices.Equal(got, []types.UID{p.UID}) {
		t.Errorf("evicted %v 31s after the soft threshold was first met, want the pod", got)
	}
}
