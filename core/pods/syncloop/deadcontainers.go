package syncloop

import (
	"context"
	"sync"

	"github.com/hashicorp/go-hclog"

	"github.com/microlet/microlet/core/runtime/container"
)

// deadContainerBuffer is upstream's containerDeletorBufferLimit: removals
// asked for while this many wait are asked again at the next housekeeping.
const deadContainerBuffer = 50

// deadContainer is an exited container instance to remove.
type deadContainer struct {
	podName, podNamespace, name, id string
}

// deadContainers removes, one at a time, the exited containers of pods that
// are gone: no source wants them and their workers terminated them (or
// forgot them). Upstream's podContainerDeletor does this on ContainerDied
// events; here housekeeping asks, every 2 s, for what the runtime lists,
// which also catches a pod whose last container died before its source
// dropped it. Without it they waited for the next container GC, up to a
// minute, and a batch of deleted pods left the GC as many removals to make
// at once, besides their sandboxes, on a node that may by then be starting
// the next batch. Sandboxes, and the dead instances of pods that still run
// (how many to keep is the imagegc plugin's policy), stay with container GC.
type deadContainers struct {
	runtime Runtime
	log     hclog.Logger
	queue   chan deadContainer

	mu sync.Mutex
	// asked are the IDs queued or being removed, asked for once.
	asked map[string]bool
}

func newDeadContainers(runtime Runtime, log hclog.Logger) *deadContainers {
	return &deadContainers{runtime: runtime, log: log, queue: make(chan deadContainer, deadContainerBuffer), asked: map[string]bool{}}
}

// remove asks for the exited containers of a runtime pod to be removed.
func (d *deadContainers) remove(rp *container.Pod) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, c := range rp.Containers {
		if c.State != container.StateExited || d.asked[c.ID] {
			continue
		}
		select {
		case d.queue <- deadContainer{podName: rp.Name, podNamespace: rp.Namespace, name: c.Name, id: c.ID}:
			d.asked[c.ID] = true
		default:
			return // backed up: the next housekeeping asks again
		}
	}
}

// run removes what is asked until ctx ends. A removal that fails is asked
// again at the next housekeeping, and container GC tries too.
func (d *deadContainers) run(ctx context.Context) {
	for {
		select {
		case <-ctx.Done():
			return
		case c := <-d.queue:
			if err := d.runtime.DeleteContainer(ctx, c.podName, c.podNamespace, c.name, c.id); err != nil {
				d.log.Debug("cannot remove a dead container of a deleted pod", "pod", c.podNamespace+"/"+c.podName, "container_id", c.id, "error", err)
			}
			d.mu.Lock()
			delete(d.asked, c.id)
			d.mu.Unlock()
		}
	}
}

// removeDeadContainers has the exited containers of the runtime's pods
// removed where the pod is gone: nothing of it runs, no source wants it (a
// desired pod waiting for admission keeps its finished init containers) and
// its worker says its content may go.
func (l *Loop) removeDeadContainers(pods []*container.Pod) {
	for _, rp := range pods {
		if runs(rp) {
			continue
		}
		if _, desired := l.desired.get(rp.UID); desired || !l.workers.ShouldPodContentBeRemoved(rp.UID) {
			continue
		}
		l.deadContainers.remove(rp)
	}
}
