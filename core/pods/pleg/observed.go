package pleg

import (
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/runtime/container"
)

// observation is a pod as a read outside a relist saw it, and when that
// read began.
type observation struct {
	pod *container.Pod
	at  time.Time
}

// Observed tells PLEG of a pod's status read from the runtime outside a
// relist, already in the cache and acted on: the sync loop reads a pod
// back once a sync started its containers. The first relist whose listing
// begins after that read compares the pod with it instead of with its own
// last listing, so that it neither reads the pod again nor sends the
// events of the start, whose sync would change nothing: each start would
// otherwise cost the runtime a second GetPodStatus and the loop a second
// sync. An observation in which a container died or went away is not
// taken, so that those events still reach the loop.
func (p *PLEG) Observed(status *container.PodStatus) {
	if status == nil {
		return
	}
	p.observedMu.Lock()
	defer p.observedMu.Unlock()
	p.observed[status.UID] = observation{pod: status.Pod(), at: status.Timestamp}
}

// takeObserved makes each observation read before the listing that began
// at start the old listing of its pod's record, and drops it. Later ones
// wait for the next relist. It runs under relistMu, after setCurrent.
func (p *PLEG) takeObserved(start time.Time) {
	p.observedMu.Lock()
	defer p.observedMu.Unlock()
	for uid, o := range p.observed {
		if !o.at.Before(start) {
			continue
		}
		delete(p.observed, uid)
		r, ok := p.records[uid]
		if !ok || r.current == nil {
			continue // gone from the runtime: the relist says so
		}
		if onlyStarts(uid, r.old, o.pod) {
			r.old = o.pod
		}
	}
}

// onlyStarts says whether going from old to seen started or changed
// containers and nothing else.
func onlyStarts(uid types.UID, old, seen *container.Pod) bool {
	for _, e := range computeEvents(uid, old, seen) {
		if e.Type != ContainerStarted && e.Type != ContainerChanged {
			return false
		}
	}
	return true
}
