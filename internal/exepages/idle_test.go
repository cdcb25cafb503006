//go:build linux

package exepages

import (
	"sync/atomic"
	"testing"
	"time"
)

// TestAfterCallsReleasesOnlyWhenIdle: no release while a call runs, one
// after the last of overlapping calls ends.
func TestAfterCallsReleasesOnlyWhenIdle(t *testing.T) {
	var releases atomic.Int32
	released := make(chan struct{}, 10)
	a := newAfterCalls(10*time.Millisecond, func() {
		releases.Add(1)
		released <- struct{}{}
	})

	// The calls still running, then the last one ending: longer than the
	// quiet period passes without a release, then one comes.
	noReleaseThenOne := func() {
		t.Helper()
		select {
		case <-released:
			t.Fatal("released while a call was running")
		case <-time.After(100 * time.Millisecond):
		}
		a.End()
		select {
		case <-released:
		case <-time.After(10 * time.Second):
			t.Fatal("no release after the last call ended")
		}
	}

	a.Begin()
	a.Begin()
	a.End()
	noReleaseThenOne()

	// A call that begins before the quiet period ends cancels the release.
	a.Begin()
	a.End()
	a.Begin()
	noReleaseThenOne()
	if n := releases.Load(); n != 2 {
		t.Errorf("released %d times, want 2", n)
	}
}

// TestAfterCallsSkipsReleaseWhenCallBegan: a timer whose function already
// started when a call began does not release.
func TestAfterCallsSkipsReleaseWhenCallBegan(t *testing.T) {
	var releases atomic.Int32
	a := newAfterCalls(time.Hour, func() { releases.Add(1) })
	a.Begin()
	a.fire()
	if n := releases.Load(); n != 0 {
		t.Errorf("released %d times during a call, want 0", n)
	}
	a.End()
	a.fire()
	if n := releases.Load(); n != 1 {
		t.Errorf("released %d times when idle, want 1", n)
	}
}
