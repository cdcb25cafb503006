package podworkers

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
)

func TestCacheErrorBacksOff(t *testing.T) {
	h := newHarness(t)
	h.cache.Set("a", nil, errors.New("rpc error: code = DeadlineExceeded"), h.clock.Now().Add(time.Second))
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Create, Pod: newPod("a", "web")})
	h.idle("a")
	due := h.dueIn("a")
	if due < DefaultBackOffPeriod || due >= DefaultBackOffPeriod*3/2 {
		t.Errorf("requeued in %v after a status error; want the backoff [10s, 15s)", due)
	}
	select {
	case c := <-h.syncer.calls:
		t.Errorf("%s called without a status", c.method)
	default:
	}
}

func (h *harness) dueIn(uid types.UID) time.Duration {
	h.t.Helper()
	h.queue.mu.Lock()
	defer h.queue.mu.Unlock()
	at, ok := h.queue.queue[uid]
	if !ok {
		h.t.Fatalf("%s is not on the work queue", uid)
	}
	return at.Sub(h.clock.Now())
}

func TestRequeue(t *testing.T) {
	tests := []struct {
		name    string
		result  reply
		min     time.Duration
		max     time.Duration
		syncErr bool
	}{
		{"after a sync: the resync interval plus up to 50%", reply{}, DefaultResyncInterval, DefaultResyncInterval * 3 / 2, false},
		{"after an error: the backoff plus up to 50%", reply{err: errors.New("failed to pull")}, DefaultBackOffPeriod, DefaultBackOffPeriod * 3 / 2, true},
		{"network not ready: 1 s plus up to 50%", reply{err: fmt.Errorf("%s: %v", NetworkNotReadyErrorMsg, "cni plugin not initialized")}, time.Second, 1500 * time.Millisecond, true},
		{"terminal: at once", reply{terminal: true}, 0, 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h := newHarness(t)
			h.syncer.hold(terminating, true) // stop after the first state change
			h.syncer.queue(syncPod, tt.result)
			h.workers.UpdatePod(UpdatePodOptions{UpdateType: Create, Pod: newPod("a", "web")})
			h.expect(syncPod, "a")
			if tt.result.terminal {
				h.expect(terminating, "a")
			} else {
				h.idle("a")
			}
			due := h.dueIn("a")
			if tt.max == 0 {
				if due > 0 {
					t.Errorf("requeued in %v; want at once", due)
				}
				return
			}
			if due < tt.min || due >= tt.max {
				t.Errorf("requeued in %v; want [%v, %v)", due, tt.min, tt.max)
			}
			h.clock.Step(tt.min - time.Millisecond)
			if got := h.queue.GetWork(); len(got) != 0 {
				t.Errorf("due early: %v", got)
			}
			h.clock.Step(tt.max - tt.min + time.Millisecond)
			if got := h.queue.GetWork(); len(got) != 1 || got[0] != "a" {
				t.Errorf("GetWork = %v; want the pod due", got)
			}
		})
	}
}
