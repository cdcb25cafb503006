package podcache

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/runtime/container"
)

var t0 = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func at(seconds int) time.Time { return t0.Add(time.Duration(seconds) * time.Second) }

func statusOf(uid types.UID, name string) *container.PodStatus {
	return &container.PodStatus{UID: uid, Name: name}
}

func TestGetUnknownPodIsEmptyStatus(t *testing.T) {
	c := New()
	got, err := c.Get("a")
	if err != nil || got == nil || got.UID != "a" || len(got.Containers) != 0 || len(got.Sandboxes) != 0 {
		t.Fatalf("Get(unknown) = %+v, %v; want an empty status with UID a", got, err)
	}
}

func TestSetGetDelete(t *testing.T) {
	inspectErr := errors.New("rpc error: deadline exceeded")
	tests := []struct {
		name       string
		writes     []func(*Cache) bool
		wantResult []bool
		wantName   string
		wantErr    error
	}{
		{
			name:       "status",
			writes:     []func(*Cache) bool{func(c *Cache) bool { return c.Set("a", statusOf("a", "one"), nil, at(1)) }},
			wantResult: []bool{true},
			wantName:   "one",
		},
		{
			name:       "error kept with the status",
			writes:     []func(*Cache) bool{func(c *Cache) bool { return c.Set("a", statusOf("a", "partial"), inspectErr, at(1)) }},
			wantResult: []bool{true},
			wantName:   "partial",
			wantErr:    inspectErr,
		},
		{
			name: "newer write replaces",
			writes: []func(*Cache) bool{
				func(c *Cache) bool { return c.Set("a", statusOf("a", "one"), nil, at(1)) },
				func(c *Cache) bool { return c.Set("a", statusOf("a", "two"), nil, at(2)) },
			},
			wantResult: []bool{true, true},
			wantName:   "two",
		},
		{
			name: "same time replaces",
			writes: []func(*Cache) bool{
				func(c *Cache) bool { return c.Set("a", statusOf("a", "one"), nil, at(1)) },
				func(c *Cache) bool { return c.Set("a", statusOf("a", "two"), nil, at(1)) },
			},
			wantResult: []bool{true, true},
			wantName:   "two",
		},
		{
			name: "older write dropped",
			writes: []func(*Cache) bool{
				func(c *Cache) bool { return c.Set("a", statusOf("a", "two"), nil, at(2)) },
				func(c *Cache) bool { return c.Set("a", statusOf("a", "one"), nil, at(1)) },
			},
			wantResult: []bool{true, false},
			wantName:   "two",
		},
		{
			name: "delete forgets",
			writes: []func(*Cache) bool{
				func(c *Cache) bool { return c.Set("a", statusOf("a", "one"), nil, at(1)) },
				func(c *Cache) bool { c.Delete("a"); return true },
			},
			wantResult: []bool{true, true},
			wantName:   "",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New()
			for i, write := range tt.writes {
				if got := write(c); got != tt.wantResult[i] {
					t.Errorf("write %d returned %v; want %v", i, got, tt.wantResult[i])
				}
			}
			got, err := c.Get("a")
			if got.Name != tt.wantName || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("Get = %q, %v; want %q, %v", got.Name, err, tt.wantName, tt.wantErr)
			}
		})
	}
}

func TestGetNewerThanReturnsAtOnceWhenFresh(t *testing.T) {
	tests := []struct {
		name     string
		setup    func(*Cache)
		minTime  time.Time
		wantName string
	}{
		{"entry written after minTime", func(c *Cache) { c.Set("a", statusOf("a", "one"), nil, at(2)) }, at(1), "one"},
		{"global timestamp after minTime", func(c *Cache) {
			c.Set("a", statusOf("a", "one"), nil, at(1))
			c.UpdateTime(at(3))
		}, at(2), "one"},
		{"unknown pod, global timestamp after minTime", func(c *Cache) { c.UpdateTime(at(3)) }, at(2), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := New()
			tt.setup(c)
			got, err := c.GetNewerThan(context.Background(), "a", tt.minTime)
			if err != nil || got.UID != "a" || got.Name != tt.wantName {
				t.Fatalf("GetNewerThan = %+v, %v; want %q", got, err, tt.wantName)
			}
		})
	}
}

type result struct {
	status *container.PodStatus
	err    error
}

// getNewerThanAsync starts a GetNewerThan and returns once it is blocked.
func getNewerThanAsync(t *testing.T, ctx context.Context, c *Cache, uid types.UID, minTime time.Time) <-chan result {
	t.Helper()
	before := waiters(c, uid)
	out := make(chan result, 1)
	go func() {
		s, err := c.GetNewerThan(ctx, uid, minTime)
		out <- result{s, err}
	}()
	for waiters(c, uid) == before {
		runtime.Gosched()
	}
	return out
}

func waiters(c *Cache, uid types.UID) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.waiters[uid])
}

func assertBlocked(t *testing.T, out <-chan result) {
	t.Helper()
	select {
	case r := <-out:
		t.Fatalf("GetNewerThan returned %+v, %v while no fresh enough status was in the cache", r.status, r.err)
	default:
	}
}

func TestGetNewerThanBlocksUntilSet(t *testing.T) {
	c := New()
	c.Set("a", statusOf("a", "stale"), nil, at(1))
	c.UpdateTime(at(1))
	out := getNewerThanAsync(t, context.Background(), c, "a", at(2))
	assertBlocked(t, out)

	c.Set("a", statusOf("a", "still stale"), nil, at(1))
	c.UpdateTime(at(1))
	c.Set("b", statusOf("b", "other pod"), nil, at(5))
	assertBlocked(t, out)
	if n := waiters(c, "a"); n != 1 {
		t.Fatalf("%d waiters after writes that do not satisfy it; want 1", n)
	}

	c.Set("a", statusOf("a", "fresh"), nil, at(3))
	r := <-out
	if r.err != nil || r.status.Name != "fresh" {
		t.Fatalf("GetNewerThan = %+v, %v; want the fresh status", r.status, r.err)
	}
	if n := waiters(c, "a"); n != 0 {
		t.Errorf("%d waiters left; want 0", n)
	}
}

func TestGetNewerThanWokenByUpdateTime(t *testing.T) {
	c := New()
	c.Set("a", statusOf("a", "current"), nil, at(1))
	inspectErr := errors.New("inspect failed")
	c.Set("b", nil, inspectErr, at(1))
	outA := getNewerThanAsync(t, context.Background(), c, "a", at(2))
	outB := getNewerThanAsync(t, context.Background(), c, "b", at(2))
	outC := getNewerThanAsync(t, context.Background(), c, "c", at(2))
	outLate := getNewerThanAsync(t, context.Background(), c, "a", at(10))

	c.UpdateTime(at(2)) // upstream wakes a waiter whose minimum the new time reaches
	if r := <-outA; r.err != nil || r.status.Name != "current" {
		t.Errorf("pod a: %+v, %v; want the current status", r.status, r.err)
	}
	if r := <-outB; !errors.Is(r.err, inspectErr) {
		t.Errorf("pod b: error %v; want the cached inspection error", r.err)
	}
	if r := <-outC; r.err != nil || r.status.UID != "c" || len(r.status.Containers) != 0 {
		t.Errorf("pod c: %+v, %v; want an empty status", r.status, r.err)
	}
	assertBlocked(t, outLate)
	c.UpdateTime(at(11))
	if r := <-outLate; r.err != nil {
		t.Errorf("late waiter: %v", r.err)
	}
}

func TestGetNewerThanCancelled(t *testing.T) {
	c := New()
	ctx, cancel := context.WithCancel(context.Background())
	out := getNewerThanAsync(t, ctx, c, "a", at(1))
	other := getNewerThanAsync(t, context.Background(), c, "a", at(1))
	cancel()
	if r := <-out; !errors.Is(r.err, context.Canceled) || r.status != nil {
		t.Fatalf("cancelled GetNewerThan = %+v, %v; want context.Canceled", r.status, r.err)
	}
	if n := waiters(c, "a"); n != 1 {
		t.Fatalf("%d waiters after one gave up; want the other one left", n)
	}
	c.Set("a", statusOf("a", "fresh"), nil, at(2))
	if r := <-other; r.err != nil || r.status.Name != "fresh" {
		t.Errorf("remaining waiter got %+v, %v", r.status, r.err)
	}
}
