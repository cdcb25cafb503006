package podworkers

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
)

// WorkQueue holds each pod's next sync time, as upstream's basicWorkQueue:
// the workers enqueue, the sync loop takes what is due on its sync tick.
type WorkQueue struct {
	clock clock.PassiveClock
	mu    sync.Mutex
	queue map[types.UID]time.Time
}

// NewWorkQueue makes an empty queue; clk nil is the real clock.
func NewWorkQueue(clk clock.PassiveClock) *WorkQueue {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &WorkQueue{clock: clk, queue: map[types.UID]time.Time{}}
}

// Enqueue schedules a pod's sync delay from now, replacing any earlier
// schedule of the pod.
func (q *WorkQueue) Enqueue(uid types.UID, delay time.Duration) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.queue[uid] = q.clock.Now().Add(delay)
}

// GetWork removes and returns the pods whose time has passed.
func (q *WorkQueue) GetWork() []types.UID {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	var due []types.UID
	for uid, at := range q.queue {
		if at.Before(now) {
			due = append(due, uid)
			delete(q.queue, uid)
		}
	}
	return due
}
