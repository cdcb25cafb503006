package podruntime

import (
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
)

// terminationOrdering makes sidecars stop after the regular containers, and
// each sidecar after the sidecars declared after it, within the grace
// period (upstream's kuberuntime_termination_order.go).
type terminationOrdering struct {
	// terminated has a channel per container, closed once it stopped.
	terminated map[string]chan struct{}
	// prereqs are the channels a container waits on before it is stopped.
	prereqs map[string][]chan struct{}

	mu sync.Mutex
}

// newTerminationOrdering orders the termination of the pod's running
// containers (by name).
func newTerminationOrdering(pod *v1.Pod, running []string) *terminationOrdering {
	o := &terminationOrdering{terminated: map[string]chan struct{}{}, prereqs: map[string][]chan struct{}{}}
	isRunning := map[string]bool{}
	for _, name := range running {
		isRunning[name] = true
	}
	channel := func(name string) chan struct{} {
		ch := make(chan struct{})
		// Nothing waits on a container that is not running.
		if !isRunning[name] {
			close(ch)
		}
		o.terminated[name] = ch
		return ch
	}
	var regular []chan struct{}
	for _, c := range pod.Spec.Containers {
		regular = append(regular, channel(c.Name))
	}
	var laterSidecar chan struct{}
	for i := len(pod.Spec.InitContainers) - 1; i >= 0; i-- {
		c := &pod.Spec.InitContainers[i]
		ch := channel(c.Name)
		if !isSidecar(c) {
			continue
		}
		o.prereqs[c.Name] = append(o.prereqs[c.Name], regular...)
		if laterSidecar != nil {
			o.prereqs[c.Name] = append(o.prereqs[c.Name], laterSidecar)
		}
		laterSidecar = ch
	}
	return o
}

// waitForTurn waits until the containers name must outlive have stopped, at
// most gracePeriod seconds, and returns how long it waited.
func (o *terminationOrdering) waitForTurn(name string, gracePeriod int64) time.Duration {
	if gracePeriod <= 0 {
		return 0
	}
	start := time.Now()
	deadline := time.NewTimer(time.Duration(gracePeriod) * time.Second)
	defer deadline.Stop()
	for _, ch := range o.prereqs[name] {
		select {
		case <-ch:
		case <-deadline.C:
			return time.Since(start)
		}
	}
	return time.Since(start)
}

// containerTerminated records that name stopped.
func (o *terminationOrdering) containerTerminated(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if ch, ok := o.terminated[name]; ok {
		close(ch)
		delete(o.terminated, name)
	}
}
