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
	// maxNodeStops bounds them for the node, so that one large pod leaves
	// room for other pods' stops.
	maxNodeStops = 64
)

// stopSlots are the node's StopContainer slots.
type stopSlots chan struct{}

func newStopSlots() stopSlots { return make(stopSlots, maxNodeStops) }

// newPodStopSlots are one pod kill's slots.
func newPodStopSlots() chan struct{} { return make(chan struct{}, maxPodStops) }

// acquire takes a slot of the pod's (podSlots; nil for a lone stop) and
// one of the node's, and says how long that took; release gives them back.
// It fails only when ctx ends.
func (s stopSlots) acquire(ctx context.Context, podSlots chan struct{}) (release func(), waited time.Duration, err error) {
	start := time.Now()
	if podSlots != nil {
		select {
		case podSlots <- struct{}{}:
		case <-ctx.Done():
			return nil, time.Since(start), ctx.Err()
		}
	}
	select {
	case s <- struct{}{}:
	case <-ctx.Done():
		if podSlots != nil {
			<-podSlots
		}
		return nil, time.Since(start), ctx.Err()
	}
	return func() {
		<-s
		if podSlots != nil {
			<-podSlots
		}
	}, time.Since(start), nil
}
