package syncloop

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/pods/podconfig"
)

// containerIDs are the IDs of the pod's containers on the fake runtime.
func (r *fakeRuntime) containerIDs(uid types.UID) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var ids []string
	if st, ok := r.pods[uid]; ok {
		for _, c := range st.Containers {
			ids = append(ids, c.ID)
		}
	}
	return ids
}

// Housekeeping has the exited containers of a pod removed once no source
// wants it and it terminated, and never those of a desired pod: finished
// (its status still reads them), evicted (until its source drops it) or
// not yet admitted.
func TestDeadContainersOfGonePodsAreRemoved(t *testing.T) {
	h := newHarness(t, 0)
	web := h.newPod("web", v1.RestartPolicyAlways)
	job := h.newPod("job", v1.RestartPolicyNever)
	evicted := h.newPod("evicted", v1.RestartPolicyAlways)
	h.send(podconfig.OpAdd, web, job, evicted)
	h.waitSynced(web)
	h.waitSynced(job)
	h.waitSynced(evicted)
	webIDs, jobIDs, evictedIDs := h.runtime.containerIDs(web.UID), h.runtime.containerIDs(job.UID), h.runtime.containerIDs(evicted.UID)
	if err := h.loop.KillPod(evicted, true, nil, func(*v1.PodStatus) {}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the evicted pod is cleaned up", func() bool { return h.runtime.cleanedUp(evicted.UID) })
	h.runtime.exit(job.UID, "app", 0)
	h.waitPhase(job, v1.PodSucceeded)
	// A pod the runtime has from before, desired but waiting for
	// admission.
	h.admitter.set(Admission{Admit: false, Reason: "Waiting", Retry: true})
	parked := h.newPod("parked", v1.RestartPolicyAlways)
	h.runtime.run(parked.UID, parked.Name, "app")
	h.runtime.exit(parked.UID, "app", 1)
	h.send(podconfig.OpAdd, parked)
	parkedIDs := h.runtime.containerIDs(parked.UID)

	h.send(podconfig.OpRemove, web)
	eventually(t, "web is killed and cleaned up", func() bool { return h.runtime.killed(web.UID) && h.runtime.cleanedUp(web.UID) })
	eventually(t, "housekeeping has web's dead container removed", func() bool {
		h.loop.housekeeping(h.ctx)
		return slices.Contains(h.runtime.deletedContainers(), webIDs[0])
	})
	// The removals are made in order: a second housekeeping's asks,
	// had it made any, are done once a third's are.
	h.loop.housekeeping(h.ctx)
	h.runtime.run("marker-uid", "marker", "app")
	h.runtime.stopAll("marker-uid")
	h.loop.housekeeping(h.ctx)
	eventually(t, "the marker orphan's dead container is removed", func() bool { return len(h.runtime.containerIDs("marker-uid")) == 0 })

	if got := h.runtime.deletedContainers(); len(got) != 2 || got[0] != webIDs[0] {
		t.Errorf("removed containers %v, want web's %v and the marker's", got, webIDs)
	}
	if got := h.runtime.containerIDs(job.UID); !slices.Equal(got, jobIDs) {
		t.Errorf("job's containers = %v, want %v", got, jobIDs)
	}
	if got := h.runtime.containerIDs(evicted.UID); !slices.Equal(got, evictedIDs) {
		t.Errorf("evicted's containers = %v, want %v", got, evictedIDs)
	}
	if got := h.runtime.containerIDs(parked.UID); !slices.Equal(got, parkedIDs) {
		t.Errorf("parked's containers = %v, want %v", got, parkedIDs)
	}
}
