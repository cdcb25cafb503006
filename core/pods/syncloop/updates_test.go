package syncloop

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/microlet/microlet/core/pods/podconfig"
)

func TestUpdatesReachTheWorkers(t *testing.T) {
	h := newHarness(t, 0)
	web, db := h.newPod("web", v1.RestartPolicyAlways), h.newPod("db", v1.RestartPolicyAlways)

	h.send(podconfig.OpAdd, web, db)
	h.waitSynced(web)
	h.waitSynced(db)

	// UPDATE and RECONCILE: the workers sync the pod as it is now.
	for _, op := range []podconfig.Op{podconfig.OpUpdate, podconfig.OpReconcile} {
		changed := web.DeepCopy()
		changed.Labels = map[string]string{"op": op.String()}
		h.send(op, changed)
		eventually(t, "web is synced after "+op.String(), func() bool {
			synced := h.runtime.synced(web.UID)
			return synced[len(synced)-1].Labels["op"] == op.String()
		})
	}

	// DELETE (graceful) stops the pod; REMOVE forgets it.
	deleting := web.DeepCopy()
	now := metav1.NewTime(time.Now())
	deleting.DeletionTimestamp = &now
	h.send(podconfig.OpDelete, deleting)
	eventually(t, "web is killed and cleaned up", func() bool { return h.runtime.killed(web.UID) && h.runtime.cleanedUp(web.UID) })
	h.send(podconfig.OpRemove, deleting)

	// REMOVE alone stops and cleans up a running pod.
	h.send(podconfig.OpRemove, db)
	eventually(t, "db is killed and cleaned up", func() bool { return h.runtime.killed(db.UID) && h.runtime.cleanedUp(db.UID) })

	if got := h.loop.DesiredPods(); len(got) != 0 {
		t.Errorf("desired pods after REMOVE: %v", got)
	}
	if got := h.activeNames(); len(got) != 0 {
		t.Errorf("active pods after REMOVE: %v", got)
	}
}

func TestUpdatesOfUnknownPodsAreIgnored(t *testing.T) {
	h := newHarness(t, 0)
	stranger := h.newPod("stranger", v1.RestartPolicyAlways)
	h.send(podconfig.OpUpdate, stranger)
	h.send(podconfig.OpReconcile, stranger)
	h.loop.syncKnown(stranger.UID)
	if got := h.loop.DesiredPods(); len(got) != 0 {
		t.Errorf("an UPDATE of a pod never added made it desired: %v", got)
	}
	if len(h.runtime.synced(stranger.UID)) != 0 {
		t.Error("a pod never added was synced")
	}
}
