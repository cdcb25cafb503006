package pleg

import (
	"errors"
	"fmt"
)

// Healthy reports whether PLEG keeps up, with upstream's messages: the last
// relist must have started within the relist threshold (3 min; 10 min while
// container events are in use), and while events are in use the event
// channel must not be full. The node's Ready condition reports the error
// as "PLEG is not healthy: <error>".
func (p *PLEG) Healthy() (bool, error) {
	if p.evented.Load() {
		if n := len(p.ch); n == cap(p.ch) {
			return false, fmt.Errorf("EventedPLEG: pleg event channel capacity is full with %v events", n)
		}
		// Upstream's evented check reports the stream as seen now.
		p.metrics.lastSeen.Set(float64(p.clock.Now().Unix()))
	}
	last := p.lastSeen()
	if last.IsZero() {
		return false, errors.New("pleg has yet to be successful")
	}
	if !p.evented.Load() {
		p.metrics.lastSeen.Set(float64(last.Unix()))
	}
	threshold := p.current.Load().threshold
	if elapsed := p.clock.Since(last); elapsed > threshold {
		return false, fmt.Errorf("pleg was last seen active %v ago; threshold is %v", elapsed, threshold)
	}
	return true, nil
}
