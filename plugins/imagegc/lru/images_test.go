package lru

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	imagegcv1 "github.com/microlet/microlet/proto/microlet/imagegc/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

const (
	Mi = uint64(1) << 20
	Gi = uint64(1) << 30
)

var now = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) *timestamppb.Timestamp { return timestamppb.New(now.Add(-d)) }

func defaults() Config {
	var c Config
	c.SetDefaults()
	return c
}

// image is an unused image of size bytes, first seen firstSeen ago and last
// used lastUsed ago (never when lastUsed < 0).
func image(id string, size uint64, firstSeen, lastUsed time.Duration) *imagegcv1.Image {
	img := &imagegcv1.Image{Id: id, SizeBytes: size, FirstSeen: ago(firstSeen)}
	if lastUsed >= 0 {
		img.LastUsed = ago(lastUsed)
	}
	return img
}

// imageFs is a 100Gi filesystem with available bytes free.
func imageFs(available uint64) *typesv1.FsStats {
	capacity := 100 * Gi
	return &typesv1.FsStats{CapacityBytes: &capacity, AvailableBytes: &available}
}

func TestLRUOrder(t *testing.T) {
	inUse := image("in-use", Gi, time.Hour, -1)
	inUse.InUse = true
	pinned := image("pinned", Gi, time.Hour, -1)
	pinned.Pinned = true
	noFirstSeen := image("no-first-seen", Gi, 0, 3*time.Hour)
	noFirstSeen.FirstSeen = nil
	images := []*imagegcv1.Image{
		image("used-1h-ago", Gi, 5*time.Hour, time.Hour),
		inUse,
		image("never-used-seen-2h", Gi, 2*time.Hour, -1),
		pinned,
		image("used-3h-ago-seen-4h", Gi, 4*time.Hour, 3*time.Hour),
		image("never-used-seen-3h", Gi, 3*time.Hour, -1),
		noFirstSeen,
		image("b-tie", Gi, 3*time.Hour, time.Hour),
		image("a-tie", Gi, 3*time.Hour, time.Hour),
	}
	var got []string
	for _, img := range lruOrder(images, now) {
		got = append(got, img.GetId())
	}
	want := []string{
		"never-used-seen-3h", "never-used-seen-2h", // never used: oldest first seen first
		"used-3h-ago-seen-4h", "no-first-seen", // last used 3h ago; unknown first seen counts as now
		"used-1h-ago", "a-tie", "b-tie", // last used 1h ago: first seen first, then ID
	}
	if !slices.Equal(got, want) {
		t.Errorf("order:\n got  %v\n want %v", got, want)
	}
}

func TestPlanImages(t *testing.T) {
	// Three unused images, least recently used first, and one seen a minute ago.
	lru := []*imagegcv1.Image{
		image("newest", 4*Gi, 10*time.Hour, time.Hour),
		image("oldest", 3*Gi, 10*time.Hour, 3*time.Hour),
		image("fresh", 6*Gi, time.Minute, -1),
		image("middle", 2*Gi, 10*time.Hour, 2*time.Hour),
	}
	tests := []struct {
		name       string
		edit       func(*Config)
		fs         *typesv1.FsStats
		bytes      uint64
		images     []*imagegcv1.Image
		want       []string
		wantReason []string
	}{
		{
			name:   "below the high threshold: nothing",
			fs:     imageFs(16 * Gi), // 84% used
			images: lru,
		},
		{
			name:       "at the high threshold: free down to the low one, least recently used first",
			fs:         imageFs(15 * Gi), // 85% used; 80% means 20Gi free, so 5Gi to go
			images:     lru,
			want:       []string{"oldest", "middle"},
			wantReason: []string{"image filesystem usage 85% is at or above high_threshold_percent 85%: freeing 5368709120 bytes to bring it down to low_threshold_percent 80%"},
		},
		{
			name:   "images younger than minimum_age stay, and the shortfall is reported",
			fs:     imageFs(5 * Gi), // 95% used, 15Gi to go: only 9Gi may go
			images: lru,
			want:   []string{"oldest", "middle", "newest"},
			wantReason: []string{
				"image filesystem usage 95% is at or above high_threshold_percent 85%: freeing 16106127360 bytes to bring it down to low_threshold_percent 80%",
				"Failed to garbage collect required amount of images. Attempted to free 16106127360 bytes, but only found 9663676416 bytes eligible to free.",
			},
		},
		{
			name:   "minimum_age 0 lets the fresh image go, first: it was never used",
			edit:   func(c *Config) { c.MinimumAge.Duration = 0 },
			fs:     imageFs(5 * Gi),
			images: lru,
			want:   []string{"fresh", "oldest", "middle", "newest"},
			wantReason: []string{
				"image filesystem usage 95% is at or above high_threshold_percent 85%: freeing 16106127360 bytes to bring it down to low_threshold_percent 80%",
			},
		},
		{
			name:       "node-level reclaim: at least bytes_to_free, whatever the usage",
			fs:         imageFs(90 * Gi),
			bytes:      4 * Gi,
			images:     lru,
			want:       []string{"oldest", "middle"},
			wantReason: []string{"node-level reclaim asked to free 4294967296 bytes"},
		},
		{
			name:       "node-level reclaim of every unused image still keeps minimum_age",
			fs:         imageFs(90 * Gi),
			bytes:      math.MaxUint64,
			images:     lru,
			want:       []string{"oldest", "middle", "newest"},
			wantReason: []string{"node-level reclaim asked to free every unused image"},
		},
		{
			name:       "maximum_age: images unused for longer go whatever the usage",
			edit:       func(c *Config) { c.MaximumAge.Duration = 90 * time.Minute },
			fs:         imageFs(90 * Gi),
			images:     lru,
			want:       []string{"oldest", "middle"},
			wantReason: []string{"2 images unused for longer than maximum_age 1h30m0s"},
		},
		{
			name:   "maximum_age counts from first seen for images never used",
			edit:   func(c *Config) { c.MaximumAge.Duration = 5 * time.Minute },
			fs:     imageFs(90 * Gi),
			images: []*imagegcv1.Image{image("never-used", Gi, 10*time.Minute, -1), image("seen-just-now", Gi, 4*time.Minute, -1)},
			want:   []string{"never-used"},
			wantReason: []string{
				"1 images unused for longer than maximum_age 5m0s",
			},
		},
		{
			name:   "what maximum_age frees counts toward the usage goal",
			edit:   func(c *Config) { c.MaximumAge.Duration = 150 * time.Minute },
			fs:     imageFs(15 * Gi), // 5Gi to go; "oldest" (3Gi) goes for its age
			images: lru,
			want:   []string{"oldest", "middle"},
			wantReason: []string{
				"1 images unused for longer than maximum_age 2h30m0s",
				"image filesystem usage 85% is at or above high_threshold_percent 85%: freeing 5368709120 bytes to bring it down to low_threshold_percent 80%",
			},
		},
		{
			name:   "high_threshold_percent 100 without maximum_age switches usage GC off",
			edit:   func(c *Config) { c.HighThresholdPercent = 100 },
			fs:     imageFs(0),
			images: lru,
		},
		{
			name:   "unknown capacity: the usage thresholds cannot apply, reclaim still can",
			fs:     &typesv1.FsStats{},
			bytes:  Gi,
			images: lru,
			want:   []string{"oldest"},
			wantReason: []string{
				"cannot apply the usage thresholds: the image filesystem's capacity is unknown or 0",
				"node-level reclaim asked to free 1073741824 bytes",
			},
		},
		{
			name: "available above capacity is taken as an empty filesystem",
			fs: func() *typesv1.FsStats {
				capacity, available := uint64(1), uint64(math.MaxUint64)
				return &typesv1.FsStats{CapacityBytes: &capacity, AvailableBytes: &available}
			}(),
			images: lru,
		},
		{
			name: "in-use and pinned images never go",
			fs:   imageFs(0),
			images: func() []*imagegcv1.Image {
				a, b := image("a", Gi, time.Hour, -1), image("b", Gi, time.Hour, -1)
				a.InUse, b.Pinned = true, true
				return []*imagegcv1.Image{a, b}
			}(),
			wantReason: []string{
				"image filesystem usage 100% is at or above high_threshold_percent 85%: freeing 21474836480 bytes to bring it down to low_threshold_percent 80%",
				"Failed to garbage collect required amount of images. Attempted to free 21474836480 bytes, but only found 0 bytes eligible to free.",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := defaults()
			if tt.edit != nil {
				tt.edit(&cfg)
			}
			if err := cfg.Validate(); err != nil {
				t.Fatalf("config: %v", err)
			}
			resp, err := PlanImages(cfg, &imagegcv1.ImageGCContext{Now: timestamppb.New(now), ImageFs: tt.fs, BytesToFree: tt.bytes}, tt.images)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(resp.GetRemoveImageIds(), tt.want) {
				t.Errorf("removed %v, want %v", resp.GetRemoveImageIds(), tt.want)
			}
			if want := strings.Join(tt.wantReason, "; "); resp.GetReason() != want {
				t.Errorf("reason:\n got  %q\n want %q", resp.GetReason(), want)
			}
			// The shortfall, last of the reasons, is also the core's
			// FreeDiskSpaceFailed event.
			wantFailed := ""
			if n := len(tt.wantReason); n > 0 && strings.HasPrefix(tt.wantReason[n-1], "Failed to garbage collect") {
				wantFailed = tt.wantReason[n-1]
			}
			if resp.GetFreeDiskSpaceFailed() != wantFailed {
				t.Errorf("free_disk_space_failed %q, want %q", resp.GetFreeDiskSpaceFailed(), wantFailed)
			}
		})
	}
}

func TestPlanImagesNeedsNow(t *testing.T) {
	if _, err := PlanImages(defaults(), &imagegcv1.ImageGCContext{}, nil); err == nil || !strings.Contains(err.Error(), "ImageGCContext.now is not set") {
		t.Errorf("PlanImages without now: %v", err)
	}
}
