package evictionengine

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/microlet/microlet/sdk"
)

// Each step is one cycle: the node's memory working set at t0+at, and what
// the engine must answer. State goes from each answer into the next request
// as bytes, as the core carries it.
type step struct {
	at         time.Duration
	workingSet int64
	// sameStats keeps the previous stats time, as a stale summary would.
	sameStats bool
	// restart gives the cycle to a fresh engine, as after a plugin crash.
	restart  bool
	evict    bool
	pressure bool
}

func runSteps(t *testing.T, edit func(*Config), steps []step) {
	t.Helper()
	e := newEngine(t, edit)
	var st []byte
	statsAt := time.Duration(0)
	for i, s := range steps {
		if s.restart {
			e = newEngine(t, edit)
		}
		if !s.sameStats {
			statsAt = s.at
		}
		n := newNode().at(statsAt).memoryWorkingSet(s.workingSet).state(st).
			pods(pod("a", 0)).stats(podStats("a", 1*Gi))
		n.req.Now = at(s.at)
		resp := runCycle(t, e, n.req)
		st = resp.GetState()
		if got := len(resp.GetEvictions()) > 0; got != s.evict {
			t.Errorf("step %d (t0+%v, working set %dMi): evict = %v, want %v", i, s.at, s.workingSet/Mi, got, s.evict)
		}
		if got := conditionStatus(resp)[ConditionMemoryPressure] == "True"; got != s.pressure {
			t.Errorf("step %d (t0+%v, working set %dMi): MemoryPressure = %v, want %v", i, s.at, s.workingSet/Mi, got, s.pressure)
		}
	}
}

// With 8Gi of capacity, memory.available = 8Gi - working set.
const (
	plenty   = 2 * Gi         // 6Gi available
	short    = 8*Gi - 50*Mi   // 50Mi available
	belowOne = 8*Gi - 900*Mi  // 900Mi available
	mid      = 8*Gi - 300*Mi  // 300Mi available
	recovery = 8*Gi - 1200*Mi // 1200Mi available
	tight    = 8*Gi - 1500*Mi // 1500Mi available
)

func TestHardThresholdActsAtOnce(t *testing.T) {
	runSteps(t, func(c *Config) { c.Hard = []string{"memory.available<100Mi"} }, []step{
		{at: 0, workingSet: plenty},
		{at: 10 * time.Second, workingSet: short, evict: true, pressure: true},
	})
}

func TestSoftThresholdWaitsForItsGracePeriod(t *testing.T) {
	soft := func(c *Config) {
		c.Hard = []string{}
		c.Soft = []string{"memory.available<1Gi"}
		c.SoftGracePeriod = []string{"memory.available=1m"}
		c.PressureTransitionPeriod = sdk.Duration{}
	}
	runSteps(t, soft, []step{
		// Met from t0: pressure at once, eviction only after a minute.
		{at: 0, workingSet: belowOne, pressure: true},
		{at: 30 * time.Second, workingSet: belowOne, pressure: true},
		{at: 60 * time.Second, workingSet: belowOne, evict: true, pressure: true},
		// Recovered: the clock stops...
		{at: 70 * time.Second, workingSet: plenty},
		// ...and starts again from the next time it is met.
		{at: 80 * time.Second, workingSet: belowOne, pressure: true},
		{at: 130 * time.Second, workingSet: belowOne, pressure: true},
		{at: 140 * time.Second, workingSet: belowOne, evict: true, pressure: true},
	})
}

func TestGracePeriodSurvivesARestart(t *testing.T) {
	runSteps(t, func(c *Config) {
		c.Soft = []string{"memory.available<1Gi"}
		c.SoftGracePeriod = []string{"memory.available=1m"}
	}, []step{
		{at: 0, workingSet: belowOne, pressure: true},
		{at: 60 * time.Second, workingSet: belowOne, restart: true, evict: true, pressure: true},
	})
}

func TestMinimumReclaimKeepsAThresholdMet(t *testing.T) {
	runSteps(t, func(c *Config) {
		c.Hard = []string{"memory.available<100Mi"}
		c.MinimumReclaim = []string{"memory.available=1Gi"}
		c.PressureTransitionPeriod = sdk.Duration{}
	}, []step{
		// Met: evict.
		{at: 0, workingSet: short, evict: true, pressure: true},
		// Above 100Mi but below 100Mi + 1Gi: still met, across a restart too.
		{at: 10 * time.Second, workingSet: mid, evict: true, pressure: true},
		{at: 20 * time.Second, workingSet: belowOne, restart: true, evict: true, pressure: true},
		// Above 1124Mi: resolved.
		{at: 30 * time.Second, workingSet: recovery},
		// Below threshold + reclaim again, but the threshold was not met: nothing.
		{at: 40 * time.Second, workingSet: mid},
	})
}

func TestStaleStatsDoNotEvictTwice(t *testing.T) {
	runSteps(t, func(c *Config) { c.Hard = []string{"memory.available<100Mi"} }, []step{
		{at: 0, workingSet: short, evict: true, pressure: true},
		{at: 10 * time.Second, workingSet: short, sameStats: true, pressure: true},
		{at: 20 * time.Second, workingSet: short, evict: true, pressure: true},
	})
}

func TestPressureTransitionPeriod(t *testing.T) {
	runSteps(t, func(c *Config) {
		c.Hard = []string{"memory.available<100Mi"}
		c.PressureTransitionPeriod = sdk.Duration{Duration: 5 * time.Minute}
	}, []step{
		{at: 0, workingSet: short, evict: true, pressure: true},
		{at: time.Minute, workingSet: plenty, pressure: true},
		{at: 5*time.Minute - time.Second, workingSet: plenty, pressure: true},
		{at: 5 * time.Minute, workingSet: plenty},
		// Met again: the period restarts from the last time it was met.
		{at: 6 * time.Minute, workingSet: short, evict: true, pressure: true},
		{at: 10 * time.Minute, workingSet: plenty, restart: true, pressure: true},
		{at: 11 * time.Minute, workingSet: plenty},
	})
}

func TestHardAndSoftOnOneSignal(t *testing.T) {
	e := newEngine(t, func(c *Config) {
		c.Hard = []string{"memory.available<100Mi"}
		c.Soft = []string{"memory.available<2Gi"}
		c.SoftGracePeriod = []string{"memory.available=1m"}
		c.MaxPodGracePeriod = sdk.Duration{Duration: 20 * time.Second}
	})
	quick := pod("quick", 0)
	quick.TerminationGracePeriodSeconds = 5
	n := newNode().memoryWorkingSet(tight).pods(pod("slow", 0), quick)
	resp := runCycle(t, e, n.req)
	if len(resp.GetEvictions()) != 0 {
		t.Fatalf("soft threshold evicted before its grace period: %v", evictedUIDs(resp))
	}
	// A minute later the soft threshold acts, with the soft grace period:
	// the pod's own, capped at max_pod_grace_period.
	n = newNode().at(time.Minute).memoryWorkingSet(tight).pods(pod("slow", 0), quick).state(resp.GetState())
	resp = runCycle(t, e, n.req)
	grace := map[string]int64{}
	for _, ev := range resp.GetEvictions() {
		grace[ev.GetPodUid()] = ev.GetGracePeriodSeconds()
	}
	if grace["slow"] != 20 || grace["quick"] != 5 {
		t.Errorf("soft eviction grace periods = %v, want slow:20 (capped) quick:5 (its own)", grace)
	}
	// Then the hard threshold is met too, and it wins: 1s for everyone.
	n = newNode().at(2*time.Minute).memoryWorkingSet(short).pods(pod("slow", 0), quick).state(resp.GetState())
	resp = runCycle(t, e, n.req)
	for _, ev := range resp.GetEvictions() {
		if ev.GetGracePeriodSeconds() != 1 {
			t.Errorf("hard eviction of %s has grace period %d, want 1", ev.GetPodUid(), ev.GetGracePeriodSeconds())
		}
	}
}

func TestStateRoundTrip(t *testing.T) {
	e := newEngine(t, func(c *Config) {
		c.Soft = []string{"memory.available<1Gi"}
		c.SoftGracePeriod = []string{"memory.available=1m"}
	})
	resp := runCycle(t, e, newNode().memoryWorkingSet(belowOne).req)
	st, err := decodeState(resp.GetState())
	if err != nil {
		t.Fatal(err)
	}
	key := "soft memory.available<1Gi for 1m0s"
	if got := st.FirstObserved[key]; !got.Equal(t0) {
		t.Errorf("first observed %q = %v, want %v (state %s)", key, got, t0, resp.GetState())
	}
	if got := st.ConditionLastObserved[ConditionMemoryPressure]; !got.Equal(t0) {
		t.Errorf("MemoryPressure last observed = %v, want %v", got, t0)
	}
	if !st.StatsTime[SignalMemoryAvailable].Equal(t0) {
		t.Errorf("stats time = %v, want %v", st.StatsTime[SignalMemoryAvailable], t0)
	}
	if len(st.Met) != 0 {
		t.Errorf("met before its grace period: %v", st.Met)
	}
	for _, o := range resp.GetObservations() {
		if o.GetSignal() == string(SignalMemoryAvailable) && !o.GetHard() && !o.GetFirstMet().AsTime().Equal(t0) {
			t.Errorf("observation first_met = %v, want %v", o.GetFirstMet(), t0)
		}
	}
}

func TestUnreadableStateStartsAfresh(t *testing.T) {
	for name, raw := range map[string][]byte{
		"garbage":       []byte("{not json"),
		"other version": []byte(`{"version": 99}`),
	} {
		t.Run(name, func(t *testing.T) {
			e := newEngine(t, func(c *Config) { c.Hard = []string{"memory.available<100Mi"} })
			res, err := e.Synchronize(newNode().memoryWorkingSet(short).pods(pod("a", 0)).state(raw).req)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Warnings) != 1 || !strings.Contains(res.Warnings[0], "starting afresh") {
				t.Errorf("warnings = %q, want one saying the state restarts", res.Warnings)
			}
			if !slices.Equal(evictedUIDs(res.Response), []string{"a"}) {
				t.Errorf("evictions = %v, want [a]: a bad state must not stop eviction", evictedUIDs(res.Response))
			}
		})
	}
}

func TestSynchronizeNeedsNow(t *testing.T) {
	e := newEngine(t, func(*Config) {})
	req := newNode().req
	req.Now = nil
	if _, err := e.Synchronize(req); err == nil || !strings.Contains(err.Error(), "SynchronizeRequest.now is not set") {
		t.Errorf("Synchronize without now: err = %v", err)
	}
}

func TestObservationsReport(t *testing.T) {
	e := newEngine(t, func(c *Config) {
		c.Hard = []string{"memory.available<100Mi", "nodefs.available<10%"}
		c.Soft = []string{"memory.available<1Gi"}
		c.SoftGracePeriod = []string{"memory.available=1m"}
	})
	req := newNode().memoryWorkingSet(belowOne).req
	req.NodeStats.Fs = nil // nodefs unobserved: not reported
	resp := runCycle(t, e, req)
	var got []string
	for _, o := range resp.GetObservations() {
		got = append(got, strings.Join([]string{o.GetSignal(), o.GetThreshold(), formatBinarySI(o.GetAvailable()), formatBinarySI(o.GetCapacity()),
			map[bool]string{true: "hard", false: "soft"}[o.GetHard()], map[bool]string{true: "met", false: "clear"}[o.GetMet()]}, " "))
	}
	want := []string{
		"memory.available 100Mi 900Mi 8Gi hard clear",
		"allocatableMemory.available 100Mi 7Gi 7Gi hard clear",
		"memory.available 1Gi 900Mi 8Gi soft met",
	}
	if !slices.Equal(got, want) {
		t.Errorf("observations:\n got  %q\n want %q", got, want)
	}
}
