package nodefacts

import (
	"io/fs"

	"golang.org/x/sys/unix"
)

// Statfs measures the filesystem that holds path.
func Statfs(path string) (FsUsage, error) {
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		return FsUsage{}, &fs.PathError{Op: "statfs", Path: path, Err: err}
	}
	return FsUsageOf(&st), nil
}

// FsUsageOf reads a statfs result as cAdvisor does (fs.getVfsStats), which
// is where upstream's node capacity, eviction signals and summary fs stats
// come from: blocks are counted in fragments of f_frsize bytes, as statfs(2)
// defines f_blocks, f_bfree and f_bavail. (pkg/volume/util/fs multiplies by
// f_bsize instead; the two differ only on filesystems whose fragment is not
// their block.) Available is what an unprivileged user may still use; used
// is what is not free, the root reserve excluded from neither.
func FsUsageOf(st *unix.Statfs_t) FsUsage {
	frsize := uint64(st.Frsize)
	return FsUsage{
		Capacity:   st.Blocks * frsize,
		Available:  st.Bavail * frsize,
		Used:       (st.Blocks - min(st.Bfree, st.Blocks)) * frsize,
		Inodes:     st.Files,
		InodesFree: st.Ffree,
		InodesUsed: st.Files - min(st.Ffree, st.Files),
	}
}
