package podruntime

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A pod's kill has at most maxPodStops StopContainer calls in flight, the
// node at most maxNodeStops; a wait for a slot ends with its context.
func TestStopSlots(t *testing.T) {
	node := newStopSlots()
	pods := []chan struct{}{newPodStopSlots(), newPodStopSlots(), newPodStopSlots()}
	var inFlight, maxNode atomic.Int32
	perPod := make([]atomic.Int32, len(pods))
	maxPod := make([]atomic.Int32, len(pods))
	raise := func(max *atomic.Int32, v int32) {
		for {
			m := max.Load()
			if v <= m || max.CompareAndSwap(m, v) {
				return
			}
		}
	}
	var wg sync.WaitGroup
	for p := range pods {
		for range 3 * maxPodStops {
			wg.Add(1)
			go func() {
				defer wg.Done()
				release, _, err := node.acquire(context.Background(), pods[p])
				if err != nil {
					t.Error(err)
					return
				}
				raise(&maxNode, inFlight.Add(1))
				raise(&maxPod[p], perPod[p].Add(1))
				time.Sleep(time.Millisecond)
				perPod[p].Add(-1)
				inFlight.Add(-1)
				release()
			}()
		}
	}
	wg.Wait()
	if got := maxNode.Load(); got > maxNodeStops {
		t.Errorf("%d stops in flight on the node, want at most %d", got, maxNodeStops)
	}
	for p := range pods {
		if got := maxPod[p].Load(); got > maxPodStops {
			t.Errorf("pod %d had %d stops in flight, want at most %d", p, got, maxPodStops)
		}
	}

	full := newPodStopSlots()
	for range maxPodStops {
		full <- struct{}{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, waited, err := node.acquire(ctx, full); !errors.Is(err, context.DeadlineExceeded) || waited < 20*time.Millisecond {
		t.Errorf("acquire with the pod's slots taken = %v after %v, want the context's end after 20ms", err, waited)
	}
	if len(node) != 0 {
		t.Errorf("%d node slots held after every release, want none", len(node))
	}
}
