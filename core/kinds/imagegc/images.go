package imagegc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	imagegcv1 "github.com/microlet/microlet/proto/microlet/imagegc/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk/nodefacts"
)

// CollectImages runs one image GC (upstream image_gc_manager.go
// GarbageCollect): it sends the plugin the image filesystem and every image,
// with whether a container uses it, whether it is pinned and the core's
// first-seen and last-used times, and removes the images the plan names.
// bytesToFree > 0 asks the plugin to free at least that much whatever its
// thresholds (node-level reclaim; math.MaxUint64: every unused image). It
// returns the bytes the removed images took. An error wrapping
// pluginhost.ErrUnavailable means the plugin does not serve and nothing was
// done.
func (m *Manager) CollectImages(ctx context.Context, bytesToFree uint64) (uint64, error) {
	m.running.Lock()
	defer m.running.Unlock()

	images, err := m.opts.Runtime.ListImages(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("image GC: %w", err)
	}
	containers, err := m.opts.Runtime.ListContainers(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("image GC: %w", err)
	}
	imageFs, err := m.imageFs(ctx)
	if err != nil {
		return 0, fmt.Errorf("image GC: %w", err)
	}
	now := m.opts.Clock.Now()
	m.images.used(now, containers)
	firstSeen, lastUsed := m.images.images(now, images)
	sandboxImage := m.sandboxImage(ctx)

	inUse := map[string]bool{}
	for _, c := range containers {
		for _, ref := range containerImageRefs(c) {
			inUse[ref] = true
		}
	}
	items := []*imagegcv1.PlanImageGCRequest{{Item: &imagegcv1.PlanImageGCRequest_Context{Context: &imagegcv1.ImageGCContext{
		Now: timestamppb.New(now), ImageFs: imageFs, BytesToFree: bytesToFree,
	}}}}
	// The core keeps the last say: only images neither in use nor pinned
	// may go, whatever the plan names.
	removable, kept := map[string]uint64{}, map[string]string{}
	for _, img := range images {
		refs := imageRefs(img)
		view := &imagegcv1.Image{
			Id:          img.GetId(),
			RepoTags:    img.GetRepoTags(),
			RepoDigests: img.GetRepoDigests(),
			SizeBytes:   img.GetSize(),
			Pinned:      img.GetPinned() || (sandboxImage != "" && slices.Contains(refs, sandboxImage)),
			InUse:       slices.ContainsFunc(refs, func(r string) bool { return inUse[r] }),
			FirstSeen:   timestamppb.New(firstSeen[img.GetId()]),
		}
		if at := lastUsed[img.GetId()]; !at.IsZero() {
			view.LastUsed = timestamppb.New(at)
		}
		switch {
		case view.InUse:
			kept[view.Id] = "in use"
		case view.Pinned:
			kept[view.Id] = "pinned"
		default:
			removable[view.Id] = view.SizeBytes
		}
		items = append(items, &imagegcv1.PlanImageGCRequest{Item: &imagegcv1.PlanImageGCRequest_Image{Image: view}})
	}

	var plan *imagegcv1.PlanImageGCResponse
	err = m.plan(ctx, "imagegc plugin PlanImageGC", func(ctx context.Context, c imagegcv1.ImageGCServiceClient) error {
		stream, err := c.PlanImageGC(ctx)
		if err != nil {
			return err
		}
		for _, item := range items {
			if err := stream.Send(item); err != nil {
				return err
			}
		}
		plan, err = stream.CloseAndRecv()
		return err
	})
	if err != nil {
		return 0, err
	}
	return m.removeImages(ctx, plan, removable, kept)
}

// removeImages removes the planned images that are removable (by ID, with
// their sizes); kept says why the others stay.
func (m *Manager) removeImages(ctx context.Context, plan *imagegcv1.PlanImageGCResponse, removable map[string]uint64, kept map[string]string) (uint64, error) {
	var freed uint64
	var removed []string
	var errs []error
	for _, id := range plan.GetRemoveImageIds() {
		size, ok := removable[id]
		if !ok {
			why := kept[id]
			if why == "" {
				why = "not an image the core listed"
			}
			errs = append(errs, fmt.Errorf("the imagegc plugin named image %q, which is %s; kept", id, why))
			continue
		}
		if err := m.opts.Runtime.RemoveImage(ctx, &runtimeapi.ImageSpec{Image: id}); err != nil {
			errs = append(errs, fmt.Errorf("removing image %s: %w", id, err))
			continue
		}
		freed += size
		removed = append(removed, id)
		delete(removable, id)
		kept[id] = "already removed"
	}
	m.recordFreeDiskSpaceFailed(plan)
	if len(removed) > 0 || plan.GetReason() != "" {
		m.log.Info("image garbage collection", "removed", removed, "bytes_freed", freed, "reason", plan.GetReason())
	}
	return freed, errors.Join(errs...)
}

// imageFs is the runtime's image filesystem: used bytes and inodes from the
// runtime (its first image filesystem), capacity and free space from statfs
// of its mount point, as the kubelet's CRI stats provider builds it.
func (m *Manager) imageFs(ctx context.Context) (*typesv1.FsStats, error) {
	info, err := m.opts.Runtime.ImageFsInfo(ctx)
	if err != nil {
		return nil, err
	}
	filesystems := info.GetImageFilesystems()
	if len(filesystems) == 0 {
		return nil, errors.New("the runtime reports no image filesystem")
	}
	usage := filesystems[0]
	fs := &typesv1.FsStats{Time: timestamppb.New(time.Unix(0, usage.GetTimestamp()))}
	if usage.GetTimestamp() == 0 {
		fs.Time = timestamppb.New(m.opts.Clock.Now())
	}
	if u := usage.GetUsedBytes(); u != nil {
		fs.UsedBytes = &u.Value
	}
	if u := usage.GetInodesUsed(); u != nil {
		fs.InodesUsed = &u.Value
	}
	if mount := usage.GetFsId().GetMountpoint(); mount != "" {
		u, err := nodefacts.Statfs(mount)
		if err != nil {
			return nil, fmt.Errorf("the image filesystem: %w", err)
		}
		fs.CapacityBytes, fs.AvailableBytes, fs.Inodes, fs.InodesFree = &u.Capacity, &u.Available, &u.Inodes, &u.InodesFree
	}
	return fs, nil
}

// sandboxImage is the runtime's sandbox (pause) image, which must never be
// removed: CRI pins it only from containerd 1.7 on, so it is also read from
// the runtime's verbose status (containerd's config, "sandboxImage"). ""
// when the runtime does not say.
func (m *Manager) sandboxImage(ctx context.Context) string {
	st, err := m.opts.Runtime.Status(ctx, true)
	if err != nil {
		return ""
	}
	var config struct {
		SandboxImage string `json:"sandboxImage"`
	}
	if raw, ok := st.GetInfo()["config"]; ok && json.Unmarshal([]byte(raw), &config) == nil {
		return config.SandboxImage
	}
	return ""
}
