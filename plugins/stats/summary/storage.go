package summary

import (
	"google.golang.org/protobuf/types/known/timestamppb"

	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// filesystem is a whole filesystem's FsStats (the kubelet's RootFsStats):
// used and inodes used are the filesystem's.
func filesystem(fs *FsSample) *typesv1.FsStats {
	return &typesv1.FsStats{
		Time:           timestamp(fs.Time),
		AvailableBytes: ptr(fs.Available),
		CapacityBytes:  ptr(fs.Capacity),
		UsedBytes:      ptr(fs.Used),
		InodesFree:     ptr(fs.InodesFree),
		Inodes:         ptr(fs.Inodes),
		InodesUsed:     ptr(saturatingSub(fs.Inodes, fs.InodesFree)),
	}
}

// on is FsStats for something that lives on fs: the filesystem's
// capacity and what is free on it, with no usage yet (the kubelet's
// rootFsInfoToFsStats). fs may be nil when it could not be measured.
func on(fs *FsSample) *typesv1.FsStats {
	if fs == nil {
		return &typesv1.FsStats{}
	}
	return &typesv1.FsStats{
		Time:           timestamp(fs.Time),
		AvailableBytes: ptr(fs.Available),
		CapacityBytes:  ptr(fs.Capacity),
		InodesFree:     ptr(fs.InodesFree),
		Inodes:         ptr(fs.Inodes),
	}
}

// runtimeFs is an image or container filesystem: what the runtime says it
// uses there, on the filesystem's statfs (the kubelet's ImageFsStats).
func runtimeFs(r *RuntimeFsSample) *typesv1.FsStats {
	out := on(r.Fs)
	out.Time = r.Usage.GetTimestamp()
	out.UsedBytes = copyOf(r.Usage.UsedBytes)
	out.InodesUsed = copyOf(r.Usage.InodesUsed)
	return out
}

// addUsage adds what usage found to out, keeping the later time (the
// kubelet's addUsage and maxUpdateTime).
func addUsage(out *typesv1.FsStats, usedBytes, inodesUsed *uint64, at *timestamppb.Timestamp) {
	out.UsedBytes = sum(out.UsedBytes, usedBytes)
	out.InodesUsed = sum(out.InodesUsed, inodesUsed)
	if at != nil && (out.Time == nil || at.AsTime().After(out.Time.AsTime())) {
		out.Time = at
	}
}

// filesOn is files measured by a walk on fs (the kubelet's container and
// pod log stats).
func filesOn(fs *FsSample, usage *DiskUsage) *typesv1.FsStats {
	out := on(fs)
	addUsage(out, &usage.Bytes, &usage.Inodes, timestamp(usage.Time))
	return out
}

// volume is one volume's VolumeStats: every field set, as the kubelet's
// parsePodVolumeStats sets them (0 where unknown).
func volume(v VolumeSample) *typesv1.VolumeStats {
	fs := v.Fs
	if fs == nil {
		fs = &FsSample{}
	}
	return &typesv1.VolumeStats{
		Name: v.Name,
		Fs: &typesv1.FsStats{
			Time:           timestamp(v.Usage.Time),
			AvailableBytes: ptr(fs.Available),
			CapacityBytes:  ptr(fs.Capacity),
			UsedBytes:      ptr(v.Usage.Bytes),
			Inodes:         ptr(fs.Inodes),
			InodesFree:     ptr(fs.InodesFree),
			InodesUsed:     ptr(v.Usage.Inodes),
		},
	}
}

// volumes are a pod's VolumeStats, local ephemeral volumes first, as the
// kubelet lists them; volumes not measured yet are left out.
func volumes(p PodSample) []*typesv1.VolumeStats {
	var ephemeral, other []*typesv1.VolumeStats
	for _, v := range p.Volumes {
		if v.Usage == nil {
			continue
		}
		if v.Ephemeral {
			ephemeral = append(ephemeral, volume(v))
		} else {
			other = append(other, volume(v))
		}
	}
	return append(ephemeral, other...)
}

// ephemeralStorage is the kubelet's calcEphemeralStorage for the CRI
// stats provider: each container's writable layer and logs, the local
// ephemeral volumes, the pod's own log files and its etc-hosts file, on
// the node's filesystem.
func ephemeralStorage(p PodSample, containers []*typesv1.ContainerStats, nodeFs *FsSample) *typesv1.FsStats {
	out := on(nodeFs)
	for _, c := range containers {
		rootfs := c.GetRootfs()
		if rootfs == nil {
			continue
		}
		addUsage(out, rootfs.UsedBytes, rootfs.InodesUsed, rootfs.Time)
		if logs := c.GetLogs(); logs != nil {
			addUsage(out, logs.UsedBytes, logs.InodesUsed, logs.Time)
		}
	}
	for _, v := range p.Volumes {
		if v.Ephemeral && v.Usage != nil {
			addUsage(out, &v.Usage.Bytes, &v.Usage.Inodes, timestamp(v.Usage.Time))
		}
	}
	for _, files := range []*DiskUsage{p.Logs, p.EtcHosts} {
		if files != nil {
			addUsage(out, &files.Bytes, &files.Inodes, timestamp(files.Time))
		}
	}
	return out
}

// sum adds two optional counts; unknown plus unknown stays unknown.
func sum(a, b *uint64) *uint64 {
	switch {
	case a == nil:
		return copyOf(b)
	case b == nil:
		return a
	}
	return ptr(*a + *b)
}
