package sdk

import "testing"

type countingTracker struct{ active, begun int }

func (c *countingTracker) Begin() { c.active++; c.begun++ }
func (c *countingTracker) End()   { c.active-- }

func TestWorkCountsAsACall(t *testing.T) {
	tracker := &countingTracker{}
	workTracker = tracker
	t.Cleanup(func() { workTracker = nil })
	ran := false
	Work(func() {
		ran = true
		if tracker.active != 1 {
			t.Errorf("during Work: %d calls active, want 1", tracker.active)
		}
	})
	if !ran || tracker.begun != 1 || tracker.active != 0 {
		t.Errorf("after Work: ran %v, begun %d, active %d; want true, 1, 0", ran, tracker.begun, tracker.active)
	}
}

func TestWorkWithoutTrackerJustRuns(t *testing.T) {
	ran := false
	Work(func() { ran = true })
	if !ran {
		t.Error("Work did not run f")
	}
}
