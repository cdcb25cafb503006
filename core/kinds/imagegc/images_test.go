package imagegc

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/microlet/microlet/core/pluginhost"
)

const mib = 1 << 20

// imageNode has the sandbox image, an image a dead container uses, an image
// a running container uses, a CRI-pinned image and two unused ones.
func imageNode(t *testing.T) *fakeRuntime {
	return &fakeRuntime{
		imageFsMount: t.TempDir(),
		sandboxImage: "localhost/pause:1",
		images: []*runtimeapi.Image{
			image("sha256:pause", "localhost/pause:1", 1*mib),
			image("sha256:busybox", "localhost/busybox:1", 2*mib),
			image("sha256:app", "localhost/app:1", 4*mib),
			{Id: "sha256:pinned", RepoTags: []string{"localhost/pinned:1"}, Size: 8 * mib, Pinned: true},
			image("sha256:old", "localhost/old:1", 16*mib),
			image("sha256:older", "localhost/older:1", 32*mib),
		},
		containers: []*runtimeapi.Container{
			container("c1", "sb", "live", "app", running, epoch, "localhost/busybox:1"),
			// A dead container still holds its image, and names it by ID.
			container("c0", "sb", "live", "job", exited, epoch, "sha256:app"),
		},
	}
}

func TestImageGC(t *testing.T) {
	for _, tc := range []struct {
		name   string
		config map[string]any
		// wait is how long after the first image GC the second runs.
		wait        time.Duration
		bytesToFree uint64
		removed     []string
	}{
		{
			// The temp dir's filesystem is more than 1 % full.
			name:    "past the high threshold: every unused image old enough goes",
			config:  map[string]any{"high_threshold_percent": 1, "low_threshold_percent": 0, "minimum_age": "1m"},
			wait:    2 * time.Minute,
			removed: []string{"sha256:older", "sha256:old"},
		},
		{
			name:    "images first seen less than minimum_age ago stay",
			config:  map[string]any{"high_threshold_percent": 1, "low_threshold_percent": 0, "minimum_age": "1m"},
			wait:    30 * time.Second,
			removed: nil,
		},
		{
			name:        "node-level reclaim frees every unused image whatever the thresholds",
			config:      map[string]any{"high_threshold_percent": 100, "low_threshold_percent": 99},
			wait:        3 * time.Minute,
			bytesToFree: math.MaxUint64,
			removed:     []string{"sha256:older", "sha256:old"},
		},
		{
			name:    "below the high threshold nothing goes",
			config:  map[string]any{"high_threshold_percent": 100, "low_threshold_percent": 99},
			wait:    3 * time.Minute,
			removed: nil,
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rt := imageNode(t)
			clock := clocktesting.NewFakePassiveClock(epoch)
			m := newManager(t, rt, lruPlugin(t, tc.config), deletedPods{}, clock, t.TempDir(), "")
			// The first run only sees the images: every one is new.
			if _, err := m.CollectImages(context.Background(), 0); err != nil {
				t.Fatal(err)
			}
			if len(rt.removedImages) > 0 {
				t.Fatalf("images seen for the first time were removed: %v", rt.removedImages)
			}
			clock.SetTime(epoch.Add(tc.wait))
			freed, err := m.CollectImages(context.Background(), tc.bytesToFree)
			if err != nil {
				t.Fatal(err)
			}
			slices.Sort(rt.removedImages)
			want := slices.Clone(tc.removed)
			slices.Sort(want)
			if !slices.Equal(rt.removedImages, want) {
				t.Errorf("removed %v, want %v", rt.removedImages, want)
			}
			var wantFreed uint64
			for _, id := range tc.removed {
				wantFreed += map[string]uint64{"sha256:old": 16 * mib, "sha256:older": 32 * mib}[id]
			}
			if freed != wantFreed {
				t.Errorf("freed %d bytes, want %d", freed, wantFreed)
			}
		})
	}
}

func TestImageGCWithoutPlugin(t *testing.T) {
	rt := imageNode(t)
	m := newManager(t, rt, downPlugin{fmt.Errorf("%w: plugin imagegc/lru failed", pluginhost.ErrUnavailable)}, deletedPods{}, clocktesting.NewFakePassiveClock(epoch), t.TempDir(), "")
	freed, err := m.CollectImages(context.Background(), math.MaxUint64)
	if !errors.Is(err, pluginhost.ErrUnavailable) || freed != 0 || len(rt.removedImages) > 0 {
		t.Errorf("CollectImages = %d, %v and removed %v; want nothing done and an error wrapping ErrUnavailable", freed, err, rt.removedImages)
	}
}

// TestImageTrackerLastUsed: the last use of an image is the last container
// list that showed a container with it, by any of its names.
func TestImageTrackerLastUsed(t *testing.T) {
	tr := newImageTracker()
	images := []*runtimeapi.Image{
		{Id: "sha256:a", RepoTags: []string{"localhost/a:1"}, RepoDigests: []string{"localhost/a@sha256:d"}},
		{Id: "sha256:b", RepoTags: []string{"localhost/b:1"}},
	}
	t0, t1, t2 := epoch, epoch.Add(time.Minute), epoch.Add(2*time.Minute)
	tr.images(t0, images)
	tr.used(t1, []*runtimeapi.Container{{Image: &runtimeapi.ImageSpec{Image: "localhost/a:1"}}})
	tr.used(t2, []*runtimeapi.Container{{ImageRef: "localhost/a@sha256:d"}})
	firstSeen, lastUsed := tr.images(t2, images)
	if !firstSeen["sha256:a"].Equal(t0) || !firstSeen["sha256:b"].Equal(t0) {
		t.Errorf("first seen %v, want both at %v", firstSeen, t0)
	}
	if !lastUsed["sha256:a"].Equal(t2) || !lastUsed["sha256:b"].IsZero() {
		t.Errorf("last used %v, want a at %v and b never", lastUsed, t2)
	}
	// An image that leaves the list is forgotten: back later, it is new.
	tr.images(t2, images[1:])
	firstSeen, _ = tr.images(t2.Add(time.Hour), images)
	if !firstSeen["sha256:a"].Equal(t2.Add(time.Hour)) {
		t.Errorf("image a back after removal first seen at %v, want %v", firstSeen["sha256:a"], t2.Add(time.Hour))
	}
}
