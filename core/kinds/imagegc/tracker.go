package imagegc

import (
	"sync"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// imageTracker remembers when the core first saw each image and when it last
// saw a container use it (upstream imageGCManager's imageRecords). It is fed
// from every container list GC makes, and from every image list.
type imageTracker struct {
	mu sync.Mutex
	// firstSeen by image ID.
	firstSeen map[string]time.Time
	// lastUsed by the reference containers give: an image ID or a name.
	lastUsed map[string]time.Time
}

func newImageTracker() *imageTracker {
	return &imageTracker{firstSeen: map[string]time.Time{}, lastUsed: map[string]time.Time{}}
}

// used records that the containers' images are used now. Dead containers
// count, as upstream (an image is in use while any container has it).
func (t *imageTracker) used(now time.Time, containers []*runtimeapi.Container) {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, c := range containers {
		for _, ref := range containerImageRefs(c) {
			t.lastUsed[ref] = now
		}
	}
}

// images records the images listed now and forgets the ones no longer
// there. It returns, for each image, when it was first seen and when it was
// last used (zero if never).
func (t *imageTracker) images(now time.Time, images []*runtimeapi.Image) (firstSeen, lastUsed map[string]time.Time) {
	t.mu.Lock()
	defer t.mu.Unlock()
	listed := map[string]bool{}
	refs := map[string]bool{}
	firstSeen, lastUsed = map[string]time.Time{}, map[string]time.Time{}
	for _, img := range images {
		id := img.GetId()
		listed[id] = true
		if _, ok := t.firstSeen[id]; !ok {
			t.firstSeen[id] = now
		}
		firstSeen[id] = t.firstSeen[id]
		for _, ref := range imageRefs(img) {
			refs[ref] = true
			if at := t.lastUsed[ref]; at.After(lastUsed[id]) {
				lastUsed[id] = at
			}
		}
	}
	for id := range t.firstSeen {
		if !listed[id] {
			delete(t.firstSeen, id)
		}
	}
	for ref := range t.lastUsed {
		if !refs[ref] {
			delete(t.lastUsed, ref)
		}
	}
	return firstSeen, lastUsed
}

// imageRefs are the names a container may use an image by: its ID, tags and
// digests.
func imageRefs(img *runtimeapi.Image) []string {
	refs := append([]string{img.GetId()}, img.GetRepoTags()...)
	return append(refs, img.GetRepoDigests()...)
}

// containerImageRefs are the references a container gives for its image:
// the image it resolved to (CRI image_ref, an ID or a digest) and the one
// its config asked for.
func containerImageRefs(c *runtimeapi.Container) []string {
	var refs []string
	for _, ref := range []string{c.GetImageRef(), c.GetImage().GetImage()} {
		if ref != "" {
			refs = append(refs, ref)
		}
	}
	return refs
}
