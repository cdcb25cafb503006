package nodestatus

import (
	"cmp"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// Upstream's limits on the images a Node lists (nodeStatusMaxImages and
// nodestatus.MaxNamesPerImageInNodeStatus).
const (
	maxImages        = 50
	maxNamesPerImage = 5
)

// StatusChanged says whether status differs from original in anything but
// the conditions' heartbeat times (the kubelet's nodeStatusHasChanged).
func StatusChanged(original, status *v1.NodeStatus) bool {
	a, b := original.DeepCopy(), status.DeepCopy()
	if len(a.Conditions) != len(b.Conditions) {
		return true
	}
	for _, s := range []*v1.NodeStatus{a, b} {
		slices.SortStableFunc(s.Conditions, func(x, y v1.NodeCondition) int { return cmp.Compare(x.Type, y.Type) })
		for i := range s.Conditions {
			s.Conditions[i].LastHeartbeatTime = metav1.Time{}
		}
	}
	return !equality.Semantic.DeepEqual(a, b)
}

// reportSchedule decides when an unchanged status is posted anyway: once
// every report period, shifted by a random delay after each change or
// start so that the nodes of a cluster do not all report at once
// (isUpdateStatusPeriodExpired and calculateDelay).
type reportSchedule struct {
	period time.Duration
	last   time.Time
	delay  time.Duration
}

// due says whether a status that changed (or not) is to be posted now.
func (s *reportSchedule) due(now time.Time, changed bool) bool {
	return changed || now.Sub(s.last) >= s.period+s.delay
}

// posted records a post at now. random is in [0, 1): the delay is a random
// fraction of the period in [-period/2, period/2) after a change or the
// first post, none after a periodic one.
func (s *reportSchedule) posted(now time.Time, changed bool, random float64) {
	if changed || s.last.IsZero() {
		s.delay = time.Duration(float64(s.period) * (random - 0.5))
	} else {
		s.delay = 0
	}
	s.last = now
}

// holdNotReady says whether a NotReady status is kept back: until the
// first post after a start, for at most one update period, while the
// checks that make the node Ready (the runtime's first status poll, PLEG's
// first relist) complete. Posting it would turn a Node that was Ready
// before a restart NotReady for a moment, and the node lifecycle
// controller marks every pod of a node NotReady on that. The kubelet posts
// it; nothing is lost by waiting, since a Ready node is posted at once and
// a node still not ready is posted when the period ends.
func holdNotReady(postedSinceStart bool, sinceStart, period time.Duration, ready bool) bool {
	return !ready && !postedSinceStart && sinceStart < period
}

// Images are the node's images as its status lists them: the 50 largest,
// each with up to five names, digests first (the kubelet's Images setter
// over its image manager's list, which is sorted by size).
func Images(images []*runtimeapi.Image) []v1.ContainerImage {
	sorted := slices.Clone(images)
	slices.SortStableFunc(sorted, func(a, b *runtimeapi.Image) int { return cmp.Compare(b.GetSize(), a.GetSize()) })
	if len(sorted) > maxImages {
		sorted = sorted[:maxImages]
	}
	var out []v1.ContainerImage
	for _, img := range sorted {
		names := append(slices.Clone(img.GetRepoDigests()), img.GetRepoTags()...)
		if len(names) > maxNamesPerImage {
			names = names[:maxNamesPerImage]
		}
		out = append(out, v1.ContainerImage{Names: names, SizeBytes: int64(img.GetSize())})
	}
	return out
}
