package podworkers

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
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
		{"waiting out a backoff: the backoff plus up to 50%", reply{err: fmt.Errorf("%w: %w", ErrBackOff, errors.New("CrashLoopBackOff"))}, DefaultBackOffPeriod, DefaultBackOffPeriod * 3 / 2, true},
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

// A sync that only waits out a container's backoff is retried after the
// error backoff, so that the container restarts soon after its backoff
// ends, and it is no error in the log.
func TestBackOffIsRetriedQuietly(t *testing.T) {
	h := newHarness(t)
	var logged lockedBuffer
	h.workers.log = hclog.New(&hclog.LoggerOptions{Level: hclog.Trace, Output: &logged})
	h.syncer.queue(syncPod, reply{err: fmt.Errorf("%w: %w", ErrBackOff, errors.New("StartContainer app: CrashLoopBackOff: back-off 10s"))})
	h.workers.UpdatePod(UpdatePodOptions{UpdateType: Create, Pod: newPod("a", "web")})
	h.expect(syncPod, "a")
	h.idle("a")
	if due := h.dueIn("a"); due < DefaultBackOffPeriod || due >= DefaultBackOffPeriod*3/2 {
		t.Errorf("requeued in %v while waiting out a backoff; want the error backoff [10s, 15s)", due)
	}
	out := logged.String()
	if strings.Contains(out, "[ERROR]") || !strings.Contains(out, "pod is waiting out a backoff") {
		t.Errorf("a backoff is logged as an error, or not at all:\n%s", out)
	}
}

// lockedBuffer is a log sink safe for concurrent writers.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}
