// Package podcache is the pod status cache, upstream's container.Cache
// (pkg/kubelet/container/cache.go): the latest runtime status of every pod
// the runtime knows, written by PLEG and read by the pod workers.
//
// Every entry is at least as fresh as the cache's global timestamp, which
// PLEG advances (UpdateTime) once a relist has refreshed every pod that
// changed. That is what lets a pod worker wait, with GetNewerThan, for a
// status newer than its own last action instead of acting on a stale one.
package podcache

import (
	"context"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/runtime/container"
)

// Cache holds, per pod UID, the last status read from the runtime, the
// error that reading it gave, and when it was read. The zero value is not
// usable; call New. It is safe for concurrent use.
type Cache struct {
	mu   sync.Mutex
	pods map[types.UID]entry
	// timestamp is the global freshness mark; zero until the first
	// UpdateTime, so that nothing counts as fresh before the first relist.
	timestamp time.Time
	waiters   map[types.UID][]*waiter
}

type entry struct {
	status   *container.PodStatus
	err      error
	modified time.Time
}

// waiter is one blocked GetNewerThan.
type waiter struct {
	minTime time.Time
	ch      chan entry // buffered: a notifier never blocks
}

// New returns an empty cache.
func New() *Cache {
	return &Cache{pods: map[types.UID]entry{}, waiters: map[types.UID][]*waiter{}}
}

// Get returns the cached status of a pod and the error reading it gave.
// A pod the cache has nothing on has no containers or sandboxes on the
// runtime as far as the last relist saw, so it gets an empty status with
// only its UID set, as upstream. Callers must not modify the status.
func (c *Cache) Get(uid types.UID) (*container.PodStatus, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.get(uid)
	return e.status, e.err
}

// Set records a pod's status (or the error reading it gave) as read at
// modified, and wakes the waiters it satisfies. A write older than what the
// cache holds is dropped and Set returns false: with events and relists
// both writing, the older reading must not win. Upstream applies that rule
// only with the EventedPLEG gate on; applying it always changes nothing for
// a relist alone, whose timestamps only grow.
func (c *Cache) Set(uid types.UID, status *container.PodStatus, err error, modified time.Time) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cached, ok := c.pods[uid]; ok && cached.modified.After(modified) {
		return false
	}
	c.pods[uid] = entry{status: status, err: err, modified: modified}
	c.notify(uid, modified)
	return true
}

// Delete forgets a pod: it has nothing left on the runtime.
func (c *Cache) Delete(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	delete(c.pods, uid)
}

// UpdateTime advances the global timestamp: every entry is now known to
// be at least as fresh as t. Waiters whose minimum it reaches wake up.
func (c *Cache) UpdateTime(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.timestamp = t
	for uid := range c.waiters {
		c.notify(uid, t)
	}
}

// GetNewerThan returns the pod's status once the cache holds one newer
// than minTime: its entry was written after minTime, or the global
// timestamp passed it. It blocks until then or until ctx ends, when it
// returns ctx's error.
func (c *Cache) GetNewerThan(ctx context.Context, uid types.UID, minTime time.Time) (*container.PodStatus, error) {
	w, ready := c.subscribe(uid, minTime)
	if ready != nil {
		return ready.status, ready.err
	}
	select {
	case e := <-w.ch:
		return e.status, e.err
	case <-ctx.Done():
		if e, delivered := c.unsubscribe(uid, w); delivered {
			return e.status, e.err
		}
		return nil, ctx.Err()
	}
}

// get must be called with mu held.
func (c *Cache) get(uid types.UID) entry {
	if e, ok := c.pods[uid]; ok {
		return e
	}
	return entry{status: &container.PodStatus{UID: uid}}
}

// newerThan returns the pod's entry if it is fresher than minTime, or nil.
// It must be called with mu held.
func (c *Cache) newerThan(uid types.UID, minTime time.Time) *entry {
	globalNewer := !c.timestamp.IsZero() && c.timestamp.After(minTime)
	e, ok := c.pods[uid]
	switch {
	case !ok && globalNewer:
		d := c.get(uid)
		return &d
	case ok && (e.modified.After(minTime) || globalNewer):
		return &e
	}
	return nil
}

// notify wakes the pod's waiters that a write at t satisfies: those whose
// minimum is not after t, as upstream. It must be called with mu held.
func (c *Cache) notify(uid types.UID, t time.Time) {
	waiting := c.waiters[uid]
	kept := waiting[:0]
	for _, w := range waiting {
		if t.Before(w.minTime) {
			kept = append(kept, w)
			continue
		}
		w.ch <- c.get(uid)
	}
	if len(kept) == 0 {
		delete(c.waiters, uid)
		return
	}
	c.waiters[uid] = kept
}

// subscribe returns the entry at once if it is fresh enough, or registers
// a waiter for it.
func (c *Cache) subscribe(uid types.UID, minTime time.Time) (*waiter, *entry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e := c.newerThan(uid, minTime); e != nil {
		return nil, e
	}
	w := &waiter{minTime: minTime, ch: make(chan entry, 1)}
	c.waiters[uid] = append(c.waiters[uid], w)
	return w, nil
}

// unsubscribe removes a waiter that gave up. If a notifier got to it first,
// the entry it was sent is returned so that it is not lost.
func (c *Cache) unsubscribe(uid types.UID, w *waiter) (entry, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case e := <-w.ch:
		return e, true
	default:
	}
	waiting := c.waiters[uid]
	for i, other := range waiting {
		if other == w {
			waiting = append(waiting[:i], waiting[i+1:]...)
			break
		}
	}
	if len(waiting) == 0 {
		delete(c.waiters, uid)
	} else {
		c.waiters[uid] = waiting
	}
	return entry{}, false
}
