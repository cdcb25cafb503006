package pluginhost

import (
	"context"
	"testing"
	"time"
)

func TestWithCallTimeout(t *testing.T) {
	const timeout = 2 * time.Second
	tests := []struct {
		name       string
		deadlineIn time.Duration // 0: none
		wantAbout  time.Duration // the deadline the call gets, from now
	}{
		{"no deadline gets the call timeout", 0, timeout},
		{"an earlier deadline is kept", 100 * time.Millisecond, 100 * time.Millisecond},
		{"a later deadline is shortened", time.Hour, timeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			if tt.deadlineIn > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.deadlineIn)
				defer cancel()
			}
			callCtx, cancel := withCallTimeout(ctx, timeout)
			defer cancel()
			deadline, ok := callCtx.Deadline()
			if !ok {
				t.Fatal("the call has no deadline")
			}
			// Deadlines are compared to a window, not timed: the test only
			// needs to tell 100ms, 2s and 1h apart.
			if left := time.Until(deadline); left > tt.wantAbout || left < tt.wantAbout-time.Second/2 {
				t.Errorf("the call's deadline is in %s, want about %s", left, tt.wantAbout)
			}
		})
	}
}
