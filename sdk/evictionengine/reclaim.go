package evictionengine

import (
	"math"

	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
)

// reclaimAllUnusedImages asks image GC to remove every unused image old
// enough to go, as upstream's DeleteUnusedImages does. Asking only for the
// bytes the threshold lacks would often fall short: image sizes count layers
// that other images share, so removing them frees less than they add up to,
// and falling short costs a pod its life where freeing more costs a pull.
const reclaimAllUnusedImages = math.MaxUint64

// nodeReclaim is the node-level reclaim that may relieve a signal without
// evicting pods (upstream buildSignalToNodeReclaimFuncs), in the order to run
// it: dead containers first, since they pin the images they ran.
//   - memory and pid signals: none.
//   - with a dedicated imagefs: imagefs signals get container GC then image GC;
//     nodefs signals get none (logs and volumes are the pods' own).
//   - without one: nodefs and imagefs signals both get container GC then image GC.
func nodeReclaim(s Signal, dedicatedImageFs bool) []*evictionv1.ReclaimRequest {
	info := signals[s]
	if info.condition != ConditionDiskPressure || (dedicatedImageFs && !info.imageFs) {
		return nil
	}
	return []*evictionv1.ReclaimRequest{
		{Kind: evictionv1.ReclaimKind_RECLAIM_KIND_CONTAINER_GC, Signal: string(s)},
		{Kind: evictionv1.ReclaimKind_RECLAIM_KIND_IMAGE_GC, Signal: string(s), BytesToFree: reclaimAllUnusedImages},
	}
}
