package podruntime

import (
	"context"
	"time"
)

const (
	// maxPodStops bounds the StopContainer calls one pod's kill has in
	// flight. The kubelet stops every container of a pod at once
	// (killContainersWithSyncResult, a goroutine each); with hundreds of
	// containers that is hundreds of runtime calls, each ending in a
	// `runc kill` process, which a small node's runtime could not finish
	// within their deadlines: the calls failed, were made again, and the
	// pod never stopped (issue 19: 1000 containers still running 11
	// minutes later). A pod of up to this many containers is stopped all at
	// once, as upstream.
	maxPodStops = 32
	// maxNodeStops bounds, for the node, the stops a kill makes beyond its
	// pod's first, so that one large pod leaves room for other pods' stops.
	// Every pod's kill has one stop of its own besides: a pod never waits
	// for another pod's slots, and a node of single-container pods (up to
	// max_pods, 110 by default) sends every SIGTERM at once, as the kubelet
	// does. Counted against the node, 100 such pods had the last 36 of
	// them wait 2 s for a slot, and stopped 6 to 8% slower than the
	// kubelet (issue 18).
	maxNodeStops = 64
)

// stopSlots are the node's StopContainer slots.
type stopSlots chan struct{}

func newStopSlots() stopSlots { return make(stopSlots, maxNodeStops) }

// podStopSlots are one pod kill's slots: at most maxPodStops stops in
// flight, one of them (own) not counted against the node's.
type podStopSlots struct {
	inFlight chan struct{}
	own      chan struct{}
}

func newPodStopSlots() *podStopSlots {
	p := &podStopSlots{inFlight: make(chan struct{}, maxPodStops), own: make(chan struct{}, 1)}
	p.own <- struct{}{}
	return p
}

// acquire takes a slot of the pod's (pod; nil for a lone stop, which has
// no slot of its own), then the pod's own stop if it is free, else one of
// the node's, and says how long that took; release gives them back. It
// fails only when ctx ends.
func (s stopSlots) acquire(ctx context.Context, pod *podStopSlots) (release func(), waited time.Duration, err error) {
	start := time.Now()
	var own, inFlight chan struct{} // nil for a lone stop: never ready
	if pod != nil {
		own, inFlight = pod.own, pod.inFlight
		select {
		case inFlight <- struct{}{}:
		case <-ctx.Done():
			return nil, time.Since(start), ctx.Err()
		}
	}
	leavePod := func() {
		if inFlight != nil {
			<-inFlight
		}
	}
	releaseOwn := func() { own <- struct{}{}; leavePod() }
	select { // the pod's own stop first, when it is free
	case <-own:
		return releaseOwn, time.Since(start), nil
	default:
	}
	select {
	case <-own:
		return releaseOwn, time.Since(start), nil
	case s <- struct{}{}:
		return func() { <-s; leavePod() }, time.Since(start), nil
	case <-ctx.Done():
		leavePod()
		return nil, time.Since(start), ctx.Err()
	}
}
