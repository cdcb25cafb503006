package pluginhost

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
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

// swappingSlot hands out leases on its processes in turn, as if a hot swap
// happened between any two Acquires.
type swappingSlot struct {
	processes []*Lease
	acquired  int
}

func (s *swappingSlot) Acquire(context.Context) (*Lease, error) {
	lease := s.processes[s.acquired%len(s.processes)]
	s.acquired++
	return lease, nil
}

// testLease is a stand-in lease on a process reached over conn.
func testLease(t *testing.T, capabilities ...string) *Lease {
	conn, err := grpc.NewClient("passthrough:///unused", grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &Lease{Conn: conn, Done: make(chan struct{}), Capabilities: capabilities, Release: func() {}}
}

func TestClientGivesTheCapabilitiesOfTheProcessItCalls(t *testing.T) {
	old, swapped := testLease(t, "eviction.admit"), testLease(t)
	slot := &swappingSlot{processes: []*Lease{old, swapped}}
	// The "client" names the process whose connection it was made on.
	client := Client[*Lease]{Slot: slot, New: func(cc grpc.ClientConnInterface) *Lease {
		if cc == old.Conn {
			return old
		}
		return swapped
	}}
	for range 4 {
		err := client.Call(t.Context(), func(_ context.Context, c Conn[*Lease]) error {
			if !slices.Equal(c.Capabilities, c.Client.Capabilities) {
				t.Errorf("the call goes to a process declaring %v with the capabilities %v of another", c.Client.Capabilities, c.Capabilities)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if slot.acquired != 4 {
		t.Errorf("4 calls took %d leases, want one each", slot.acquired)
	}
}

func TestClassify(t *testing.T) {
	canceled, cancel := context.WithCancel(context.Background())
	cancel()
	plain := errors.New("the plugin's own failure")
	tests := []struct {
		name          string
		ctx           context.Context
		err           error
		wantRetryable bool
		want          error // when set, errors.Is must hold
	}{
		{"nil", context.Background(), nil, false, nil},
		{"no process", context.Background(), fmt.Errorf("%w: restarting", ErrUnavailable), true, nil},
		{"UNAVAILABLE", context.Background(), status.Error(codes.Unavailable, "later"), true, nil},
		{"RESOURCE_EXHAUSTED", context.Background(), status.Error(codes.ResourceExhausted, "busy"), true, nil},
		{"DEADLINE_EXCEEDED", context.Background(), status.Error(codes.DeadlineExceeded, "slow"), true, nil},
		{"FAILED_PRECONDITION", context.Background(), status.Error(codes.FailedPrecondition, "not configured yet"), true, nil},
		{"INVALID_ARGUMENT", context.Background(), status.Error(codes.InvalidArgument, "bad"), false, nil},
		{"UNIMPLEMENTED", context.Background(), status.Error(codes.Unimplemented, "no"), false, nil},
		{"a plain error", context.Background(), plain, false, plain},
		{"the caller's cancellation", canceled, status.Error(codes.Canceled, "canceled"), false, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Classify(tt.ctx, tt.err)
			if (tt.err == nil) != (got == nil) || errors.Is(got, ErrUnavailable) != tt.wantRetryable {
				t.Errorf("Classify(%v) = %v; retryable %v, want %v", tt.err, got, errors.Is(got, ErrUnavailable), tt.wantRetryable)
			}
			if tt.want != nil && !errors.Is(got, tt.want) {
				t.Errorf("Classify(%v) = %v, want it to wrap %v", tt.err, got, tt.want)
			}
			if tt.err != nil && tt.ctx.Err() == nil && (status.Code(got) != status.Code(tt.err) || got.Error() != tt.err.Error()) {
				t.Errorf("Classify(%v) = %v: the plugin's status and words must stay", tt.err, got)
			}
		})
	}
}

// A call that runs out of the host's time asks for a health check of its
// process at once; one the caller cancels does not.
func TestCallOutOfTimeSuspectsTheProcess(t *testing.T) {
	tests := []struct {
		name        string
		callerCtx   func() (context.Context, context.CancelFunc)
		wantSuspect bool
	}{
		{"the call's deadline", func() (context.Context, context.CancelFunc) { return context.WithCancel(t.Context()) }, true},
		{"the caller's cancellation", func() (context.Context, context.CancelFunc) {
			ctx, cancel := context.WithCancel(t.Context())
			cancel()
			return ctx, cancel
		}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			lease := testLease(t)
			lease.process, _ = fakeProcess("a")
			client := Client[*Lease]{Slot: &swappingSlot{processes: []*Lease{lease}}, Timeout: time.Millisecond,
				New: func(grpc.ClientConnInterface) *Lease { return lease }}
			ctx, cancel := tt.callerCtx()
			defer cancel()
			err := client.Call(ctx, func(ctx context.Context, _ Conn[*Lease]) error {
				<-ctx.Done() // a hung plugin answers nothing
				return status.FromContextError(ctx.Err()).Err()
			})
			if err == nil {
				t.Fatal("a call that got no answer succeeded")
			}
			select {
			case <-lease.process.checkNow:
				if !tt.wantSuspect {
					t.Error("a health check was asked for a call the caller ended")
				}
			default:
				if tt.wantSuspect {
					t.Error("no health check was asked for after the call ran out of time")
				}
			}
		})
	}
}
