package podruntime

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A pod's kill has at most maxPodStops StopContainer calls in flight; the
// node at most maxNodeStops besides each pod's own one.
func TestStopSlotsBound(t *testing.T) {
	node := newStopSlots()
	pods := []*podStopSlots{newPodStopSlots(), newPodStopSlots(), newPodStopSlots()}
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
	if got, want := maxNode.Load(), int32(maxNodeStops+len(pods)); got > want {
		t.Errorf("%d stops in flight on the node, want at most %d", got, want)
	}
	for p := range pods {
		if got := maxPod[p].Load(); got > maxPodStops {
			t.Errorf("pod %d had %d stops in flight, want at most %d", p, got, maxPodStops)
		}
	}
	if len(node) != 0 {
		t.Errorf("%d node slots held after every release, want none", len(node))
	}
	for p, pod := range pods {
		if len(pod.inFlight) != 0 || len(pod.own) != 1 {
			t.Errorf("pod %d holds %d slots and %d of its own stop after every release, want 0 and 1", p, len(pod.inFlight), len(pod.own))
		}
	}
}

// With the node's slots all taken, a pod's first stop goes at once and
// its second waits; a lone stop waits; a wait ends with its context.
func TestStopSlotsOwnStop(t *testing.T) {
	node := newStopSlots()
	for range maxNodeStops {
		node <- struct{}{}
	}
	pod := newPodStopSlots()
	release, waited, err := node.acquire(context.Background(), pod)
	if err != nil {
		t.Fatalf("a pod's first stop with the node's slots taken: %v", err)
	}
	defer release()
	if waited > time.Second {
		t.Errorf("a pod's first stop waited %v", waited)
	}
	for name, slots := range map[string]*podStopSlots{"the pod's second stop": pod, "a lone stop": nil} {
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
		if _, waited, err := node.acquire(ctx, slots); !errors.Is(err, context.DeadlineExceeded) || waited < 20*time.Millisecond {
			t.Errorf("%s with the node's slots taken = %v after %v, want the context's end after 20ms", name, err, waited)
		}
		cancel()
	}
	if len(pod.inFlight) != 1 {
		t.Errorf("the pod holds %d slots after a failed wait, want 1 (its first stop's)", len(pod.inFlight))
	}

	full := newPodStopSlots()
	for range maxPodStops {
		full.inFlight <- struct{}{}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	if _, waited, err := newStopSlots().acquire(ctx, full); !errors.Is(err, context.DeadlineExceeded) || waited < 20*time.Millisecond {
		t.Errorf("acquire with the pod's slots taken = %v after %v, want the context's end after 20ms", err, waited)
	}
}
