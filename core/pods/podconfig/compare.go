package podconfig

import (
	"slices"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"

	"github.com/microlet/microlet/core/pods/podspec"
)

// localAnnotations are set on the node, not by the pod's source, and are
// kept across updates (upstream's localAnnotations).
var localAnnotations = []string{
	podspec.ConfigSourceAnnotationKey,
	podspec.ConfigMirrorAnnotationKey,
	podspec.ConfigFirstSeenAnnotationKey,
}

// checkAndUpdatePod folds ref, the source's newer version of a pod, into
// existing, the version the syncLoop has, as upstream's namesake does. It
// reports an update when the spec, labels, source annotations or deletion
// fields changed (a graceful delete when a deletion timestamp is set), and a
// reconcile when only the status changed.
func checkAndUpdatePod(existing, ref *v1.Pod) (update, reconcile, gracefulDelete bool) {
	if !podsDifferSemantically(existing, ref) {
		if !equality.Semantic.DeepEqual(existing.Status, ref.Status) {
			existing.Status = ref.Status
			reconcile = true
		}
		return false, reconcile, false
	}
	existing.Spec = ref.Spec
	existing.Labels = ref.Labels
	existing.DeletionTimestamp = ref.DeletionTimestamp
	existing.DeletionGracePeriodSeconds = ref.DeletionGracePeriodSeconds
	existing.Status = ref.Status
	annotations := make(map[string]string, len(ref.Annotations)+len(localAnnotations))
	for k, v := range ref.Annotations {
		annotations[k] = v
	}
	for _, k := range localAnnotations {
		if v, ok := existing.Annotations[k]; ok {
			annotations[k] = v
		}
	}
	existing.Annotations = annotations
	if ref.DeletionTimestamp != nil {
		return false, false, true
	}
	return true, false, false
}

func podsDifferSemantically(existing, ref *v1.Pod) bool {
	return !equality.Semantic.DeepEqual(existing.Spec, ref.Spec) ||
		!equality.Semantic.DeepEqual(existing.Labels, ref.Labels) ||
		!equality.Semantic.DeepEqual(existing.DeletionTimestamp, ref.DeletionTimestamp) ||
		!equality.Semantic.DeepEqual(existing.DeletionGracePeriodSeconds, ref.DeletionGracePeriodSeconds) ||
		!sourceAnnotationsEqual(existing.Annotations, ref.Annotations)
}

// sourceAnnotationsEqual compares annotations, ignoring the local ones.
func sourceAnnotationsEqual(a, b map[string]string) bool {
	for k, v := range a {
		if w, ok := b[k]; !slices.Contains(localAnnotations, k) && (!ok || w != v) {
			return false
		}
	}
	for k := range b {
		if _, ok := a[k]; !slices.Contains(localAnnotations, k) && !ok {
			return false
		}
	}
	return true
}
