package pluginhost

import (
	"context"
	"errors"
	"testing"
)

func TestFollowMovesToTheNextProcessWhenOneIsRetired(t *testing.T) {
	first, second := testLease(t), testLease(t)
	retire := make(chan struct{})
	first.Done = retire
	slot := &swappingSlot{processes: []*Lease{first, second}}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	var sessions []*Lease
	var ended []error
	Follow(ctx, slot, func(ctx context.Context, lease *Lease) (bool, error) {
		sessions = append(sessions, lease)
		if lease == first {
			// A hot swap retires the process: its session's calls fail.
			close(retire)
			<-ctx.Done()
			return true, errors.New("a call on the retired process failed")
		}
		cancel()
		return true, nil
	}, func(err error) { ended = append(ended, err) })

	if len(sessions) != 2 || sessions[0] != first || sessions[1] != second {
		t.Fatalf("sessions ran on %v, want the first process, then the second", sessions)
	}
	if len(ended) != 1 || !errors.Is(ended[0], ErrRetired) {
		t.Errorf("sessions ended with %v, want ErrRetired for the retired process (and nothing once ctx ended)", ended)
	}
}
