package devices

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Release frees the devices of a terminated pod and updates the
// checkpoint. The plugins are not called: the device plugin API has no
// deallocation.
func (m *Manager) Release(_ context.Context, pod *v1.Pod) error {
	m.mu.Lock()
	_, held := m.allocations[pod.UID]
	delete(m.allocations, pod.UID)
	m.restored.Delete(pod.UID)
	m.mu.Unlock()
	if !held {
		return nil
	}
	m.log.Debug("devices released", "pod", pod.Namespace+"/"+pod.Name)
	return m.writeCheckpoint()
}

// ReleaseStale frees the devices of pods restored from the checkpoint that
// no source wants any more: pods removed while the core was down, whose
// containers the core stops as orphans without releasing them. Call it
// once every source has delivered its pods, with the pods the sources
// want. Pods admitted since the core started are left to Release.
func (m *Manager) ReleaseStale(desired []*v1.Pod) error {
	want := sets.New[types.UID]()
	for _, p := range desired {
		want.Insert(p.UID)
	}
	m.mu.Lock()
	var stale []types.UID
	for uid := range m.restored {
		if !want.Has(uid) {
			stale = append(stale, uid)
			delete(m.allocations, uid)
			m.restored.Delete(uid)
		}
	}
	m.mu.Unlock()
	if len(stale) == 0 {
		return nil
	}
	m.log.Info("devices of pods no source wants any more are released", "pods", stale)
	return m.writeCheckpoint()
}
