package collect

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/microlet/microlet/plugins/stats/summary"
	"github.com/microlet/microlet/sdk/nodefacts"
)

// Statfs measures the filesystem that holds path (nodefacts.Statfs, the
// formula the core's fallbacks use too).
func Statfs(path string) (*summary.FsSample, error) {
	u, err := nodefacts.Statfs(path)
	if err != nil {
		return nil, err
	}
	return &summary.FsSample{
		Time:       time.Now(),
		Capacity:   u.Capacity,
		Available:  u.Available,
		Used:       u.Used,
		Inodes:     u.Inodes,
		InodesFree: u.InodesFree,
	}, nil
}

// DiskUsage walks the tree at path as the kubelet's fs.DiskUsage does:
// allocated blocks and inodes of every entry, hard links once, without
// crossing into other filesystems, ignoring entries removed during the
// walk.
func DiskUsage(path string) (*summary.DiskUsage, error) {
	top, err := lstat(path)
	if err != nil {
		return nil, err
	}
	out := &summary.DiskUsage{Time: time.Now()}
	linked := map[uint64]struct{}{}
	err = filepath.WalkDir(path, func(p string, d fs.DirEntry, err error) error {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("disk usage of %s: %w", path, err)
		}
		st, err := lstat(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("disk usage of %s: %w", path, err)
		}
		if st.Dev != top.Dev {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if st.Nlink > 1 {
			if _, seen := linked[st.Ino]; seen {
				return nil
			}
			linked[st.Ino] = struct{}{}
		}
		out.Bytes += uint64(st.Blocks) * 512
		out.Inodes++
		return nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// FilesUsage is the disk usage of the files directly in dir, leaving its
// subdirectories out: how the kubelet measures a pod's or a container's
// log files.
func FilesUsage(dir string) (*summary.DiskUsage, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	out := &summary.DiskUsage{Time: time.Now()}
	for _, e := range entries {
		if e.IsDir() {
			continue
		}
		st, err := lstat(filepath.Join(dir, e.Name()))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		out.Bytes += uint64(st.Blocks) * 512
		out.Inodes++
	}
	return out, nil
}

// FileUsage is the disk usage of one file; nil, nil when it does not
// exist.
func FileUsage(path string) (*summary.DiskUsage, error) {
	st, err := lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &summary.DiskUsage{Time: time.Now(), Bytes: uint64(st.Blocks) * 512, Inodes: 1}, nil
}

func lstat(path string) (*syscall.Stat_t, error) {
	var st syscall.Stat_t
	if err := syscall.Lstat(path, &st); err != nil {
		return nil, &fs.PathError{Op: "lstat", Path: path, Err: err}
	}
	return &st, nil
}
