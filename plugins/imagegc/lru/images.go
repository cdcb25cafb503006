package lru

import (
	"cmp"
	"fmt"
	"math"
	"math/bits"
	"slices"
	"strings"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"

	imagegcv1 "github.com/microlet/microlet/proto/microlet/imagegc/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk"
)

// PlanImages decides which images to remove, in order (upstream
// realImageGCManager.GarbageCollect and DeleteUnusedImages):
//
//  1. With maximum_age set, every candidate unused for longer than it.
//  2. When the image filesystem is at least high_threshold_percent full,
//     candidates until usage would be back at low_threshold_percent, least
//     recently used first, skipping those seen less than minimum_age ago.
//  3. With bytes_to_free set (node-level reclaim), at least that much, by
//     the same order and the same minimum age.
//
// Candidates are the images neither in use nor pinned. An image without a
// first_seen time counts as seen now, so missing data never removes one.
func PlanImages(cfg Config, gc *imagegcv1.ImageGCContext, images []*imagegcv1.Image) (*imagegcv1.PlanImageGCResponse, error) {
	if !gc.GetNow().IsValid() {
		return nil, sdk.Invalid("ImageGCContext.now is not set or is out of range")
	}
	now := gc.GetNow().AsTime()
	candidates := lruOrder(images, now)
	resp := &imagegcv1.PlanImageGCResponse{}
	var reasons []string
	var freed uint64
	removed := map[string]bool{}
	remove := func(img *imagegcv1.Image) {
		resp.RemoveImageIds = append(resp.RemoveImageIds, img.GetId())
		removed[img.GetId()] = true
		freed += img.GetSizeBytes()
	}

	if maxAge := cfg.MaximumAge.Duration; maxAge > 0 {
		n := 0
		for _, img := range candidates {
			if now.Sub(unusedSince(img, now)) > maxAge {
				remove(img)
				n++
			}
		}
		if n > 0 {
			reasons = append(reasons, fmt.Sprintf("%d images unused for longer than maximum_age %s", n, cfg.MaximumAge))
		}
	}

	need, usageReason := usageShortfall(cfg, gc.GetImageFs())
	if usageReason != "" {
		reasons = append(reasons, usageReason)
	}
	target := max(need, gc.GetBytesToFree())
	switch b := gc.GetBytesToFree(); {
	case b == math.MaxUint64:
		reasons = append(reasons, "node-level reclaim asked to free every unused image")
	case b > 0:
		reasons = append(reasons, fmt.Sprintf("node-level reclaim asked to free %d bytes", b))
	}
	for _, img := range candidates {
		if freed >= target {
			break
		}
		if removed[img.GetId()] || now.Sub(timeOr(img.GetFirstSeen(), now)) < cfg.MinimumAge.Duration {
			continue
		}
		remove(img)
	}
	if freed < need {
		// Upstream's FreeDiskSpaceFailed event text; the core records the
		// event.
		resp.FreeDiskSpaceFailed = fmt.Sprintf("Failed to garbage collect required amount of images. Attempted to free %d bytes, but only found %d bytes eligible to free.", need, freed)
		reasons = append(reasons, resp.FreeDiskSpaceFailed)
	}
	resp.Reason = strings.Join(reasons, "; ")
	return resp, nil
}

// usageShortfall is how many bytes must go to bring the image filesystem from
// above the high threshold down to the low one, and why; 0 below the high
// threshold. With high_threshold_percent 100 and no maximum_age, upstream
// switches image GC off; only node-level reclaim then removes images.
func usageShortfall(cfg Config, fs *typesv1.FsStats) (uint64, string) {
	if cfg.HighThresholdPercent == 100 && cfg.MaximumAge.Duration == 0 {
		return 0, ""
	}
	capacity, available := fs.GetCapacityBytes(), fs.GetAvailableBytes()
	if capacity == 0 {
		return 0, "cannot apply the usage thresholds: the image filesystem's capacity is unknown or 0"
	}
	// As upstream, a filesystem cannot be more than empty; the clamp also
	// keeps mulDiv's operand within its divisor.
	available = min(available, capacity)
	usagePercent := 100 - int(mulDiv(available, 100, capacity))
	if usagePercent < cfg.HighThresholdPercent {
		return 0, ""
	}
	goal := mulDiv(capacity, uint64(100-cfg.LowThresholdPercent), 100)
	if goal <= available {
		return 0, ""
	}
	need := goal - available
	return need, fmt.Sprintf("image filesystem usage %d%% is at or above high_threshold_percent %d%%: freeing %d bytes to bring it down to low_threshold_percent %d%%",
		usagePercent, cfg.HighThresholdPercent, need, cfg.LowThresholdPercent)
}

// lruOrder is the images that may go, least recently used first, then
// first seen first (upstream byLastUsedAndDetected), then by ID so that the
// plan does not depend on the order the core listed them in.
func lruOrder(images []*imagegcv1.Image, now time.Time) []*imagegcv1.Image {
	var out []*imagegcv1.Image
	for _, img := range images {
		if !img.GetInUse() && !img.GetPinned() {
			out = append(out, img)
		}
	}
	slices.SortFunc(out, func(a, b *imagegcv1.Image) int {
		return cmp.Or(
			timeOr(a.GetLastUsed(), time.Time{}).Compare(timeOr(b.GetLastUsed(), time.Time{})),
			timeOr(a.GetFirstSeen(), now).Compare(timeOr(b.GetFirstSeen(), now)),
			cmp.Compare(a.GetId(), b.GetId()))
	})
	return out
}

// unusedSince is when the image was last used, or first seen if never used:
// the clock starts when the core first saw it, as upstream's starts at
// kubelet start.
func unusedSince(img *imagegcv1.Image, now time.Time) time.Time {
	if img.GetLastUsed().IsValid() {
		return img.GetLastUsed().AsTime()
	}
	return timeOr(img.GetFirstSeen(), now)
}

func timeOr(ts *timestamppb.Timestamp, fallback time.Time) time.Time {
	if !ts.IsValid() {
		return fallback
	}
	return ts.AsTime()
}

// mulDiv is a*b/c without overflow, for b <= c.
func mulDiv(a, b, c uint64) uint64 {
	hi, lo := bits.Mul64(a, b)
	q, _ := bits.Div64(hi, lo, c)
	return q
}
