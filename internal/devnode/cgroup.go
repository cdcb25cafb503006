package devnode

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
)

// cgroupMounts returns the mount points of every cgroup hierarchy: the v1
// controllers, named hierarchies and the v2 tree.
func cgroupMounts() ([]string, error) {
	mounts, err := procfs.GetMounts()
	if err != nil {
		return nil, err
	}
	var points []string
	for _, m := range mounts {
		if m.FSType == "cgroup" || m.FSType == "cgroup2" {
			points = append(points, m.MountPoint)
		}
	}
	return points, nil
}

// CreateCgroup creates the cgroup path in every hierarchy, for a private
// cgroup root of an agent under test: the kubelet
// refuses a cgroupRoot that is missing from any of them.
func CreateCgroup(path string) error {
	points, err := cgroupMounts()
	if err != nil {
		return err
	}
	for _, mp := range points {
		if err := os.MkdirAll(filepath.Join(mp, path), 0o755); err != nil {
			return fmt.Errorf("create cgroup %s: %w", path, err)
		}
	}
	return nil
}

// RemoveCgroup removes the cgroup path and every cgroup below it in every
// hierarchy, children first. A cgroup that still holds a process stays and
// is reported.
func RemoveCgroup(path string) error {
	points, err := cgroupMounts()
	if err != nil {
		return err
	}
	var errs []error
	for _, mp := range points {
		errs = append(errs, removeCgroupTree(filepath.Join(mp, path)))
	}
	return errors.Join(errs...)
}

func removeCgroupTree(dir string) error {
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if e.IsDir() {
			errs = append(errs, removeCgroupTree(filepath.Join(dir, e.Name())))
		}
	}
	// A cgroup directory holds only the kernel's control files, which go
	// with it: rmdir, not RemoveAll.
	if err := unix.Rmdir(dir); err != nil && !errors.Is(err, unix.ENOENT) {
		errs = append(errs, fmt.Errorf("remove cgroup %s: %w", dir, err))
	}
	return errors.Join(errs...)
}
