package syncloop

import (
	"sort"
	"sync"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// desiredPods are the pods the sources want on the node, by UID (upstream's
// pod manager, without mirror pods).
type desiredPods struct {
	mu   sync.RWMutex
	pods map[types.UID]*v1.Pod
}

func newDesiredPods() *desiredPods {
	return &desiredPods{pods: map[types.UID]*v1.Pod{}}
}

// set adds or replaces a pod.
func (d *desiredPods) set(pod *v1.Pod) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.pods[pod.UID] = pod
}

func (d *desiredPods) remove(uid types.UID) {
	d.mu.Lock()
	defer d.mu.Unlock()
	delete(d.pods, uid)
}

func (d *desiredPods) get(uid types.UID) (*v1.Pod, bool) {
	d.mu.RLock()
	defer d.mu.RUnlock()
	pod, ok := d.pods[uid]
	return pod, ok
}

// all returns the pods, oldest first (the order upstream admits them in).
func (d *desiredPods) all() []*v1.Pod {
	d.mu.RLock()
	pods := make([]*v1.Pod, 0, len(d.pods))
	for _, p := range d.pods {
		pods = append(pods, p)
	}
	d.mu.RUnlock()
	sortByCreation(pods)
	return pods
}

func sortByCreation(pods []*v1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool {
		ti, tj := pods[i].CreationTimestamp, pods[j].CreationTimestamp
		if !ti.Equal(&tj) {
			return ti.Before(&tj)
		}
		return pods[i].UID < pods[j].UID
	})
}
