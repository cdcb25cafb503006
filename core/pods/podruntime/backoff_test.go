package podruntime

import (
	"testing"
	"time"
)

// fakeClock is a settable clock.
type fakeClock struct{ now time.Time }

func (c *fakeClock) Now() time.Time          { return c.now }
func (c *fakeClock) advance(d time.Duration) { c.now = c.now.Add(d) }
func newFakeClock() *fakeClock               { return &fakeClock{now: time.Unix(1_000_000, 0)} }

func TestCrashLoopBackOffDelays(t *testing.T) {
	clock := newFakeClock()
	b := newBackoff(containerBackOffPeriod, maxContainerBackOff, clock.Now)
	var got []time.Duration
	for i := range 8 {
		// The container crashes; the manager waits out the delay, restarts
		// it, and it crashes again a second later.
		finished := clock.Now()
		if i > 0 && !b.inBackOffSince("c", finished) {
			t.Fatalf("not in backoff right after crash %d (delays so far %v)", i, got)
		}
		clock.advance(b.delay("c"))
		if b.inBackOffSince("c", finished) {
			t.Fatalf("still in backoff once the delay %v ran out", b.delay("c"))
		}
		b.next("c", finished)
		got = append(got, b.delay("c"))
		clock.advance(time.Second)
	}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 300 * time.Second, 300 * time.Second, 300 * time.Second}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("delays %v, want %v", got, want)
		}
	}
}

func TestCrashLoopBackOffResetsAfterTenMinutesOfRunning(t *testing.T) {
	clock := newFakeClock()
	b := newBackoff(containerBackOffPeriod, maxContainerBackOff, clock.Now)
	for range 4 {
		b.next("c", clock.Now())
		clock.advance(b.delay("c"))
	}
	if b.delay("c") != 80*time.Second {
		t.Fatalf("delay %v after 4 crashes, want 80s", b.delay("c"))
	}
	// It ran 10 minutes and a second before crashing again.
	clock.advance(backOffResetAfter + time.Second)
	finished := clock.Now()
	if b.inBackOffSince("c", finished) {
		t.Error("still in backoff after running longer than the reset period")
	}
	b.next("c", finished)
	if b.delay("c") != containerBackOffPeriod {
		t.Errorf("delay %v after a long run, want it back at %v", b.delay("c"), containerBackOffPeriod)
	}
}

func TestImageBackOffSinceUpdate(t *testing.T) {
	clock := newFakeClock()
	b := newBackoff(imageBackOffPeriod, maxImageBackOff, clock.Now)
	if b.inBackOffSinceUpdate("i") {
		t.Fatal("in backoff before any failure")
	}
	b.next("i", clock.Now())
	clock.advance(9 * time.Second)
	if !b.inBackOffSinceUpdate("i") {
		t.Error("not in backoff 9s after a failure with a 10s delay")
	}
	clock.advance(time.Second)
	if b.inBackOffSinceUpdate("i") {
		t.Error("still in backoff once the delay passed")
	}
}

func TestBackOffForgetAndGC(t *testing.T) {
	clock := newFakeClock()
	b := newBackoff(time.Second, time.Minute, clock.Now)
	b.next("uid-1_a", clock.Now())
	b.next("uid-10_a", clock.Now())
	b.forgetPod("uid-1")
	if b.delay("uid-1_a") != 0 || b.delay("uid-10_a") == 0 {
		t.Errorf("forgetPod(uid-1) left %v and %v", b.delay("uid-1_a"), b.delay("uid-10_a"))
	}
	clock.advance(backOffResetAfter + time.Second)
	b.gc()
	if len(b.entries) != 0 {
		t.Errorf("gc kept expired entries %v", b.entries)
	}
}
