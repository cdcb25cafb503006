package podruntime

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"k8s.io/apimachinery/pkg/types"
)

// tearDown unmounts what the pod's directory holds (memory-backed emptyDirs,
// subPath binds), deepest first, and removes the directory. It refuses to
// remove anything while a mount remains, so it never deletes through a
// mount into other data.
func (v *volumeManager) tearDown(uid types.UID) error {
	start := time.Now()
	err := v.tearDownDir(uid)
	v.book.unmount(uid, start, err)
	return err
}

func (v *volumeManager) tearDownDir(uid types.UID) error {
	dir := v.podDir(uid)
	unmountAll := func() ([]string, error) {
		points, err := v.mountPoints()
		if err != nil {
			return nil, err
		}
		var under []string
		for _, p := range points {
			if strings.HasPrefix(p, dir+string(filepath.Separator)) {
				under = append(under, p)
			}
		}
		// Deepest first: a mount inside another goes before it.
		slices.SortFunc(under, func(a, b string) int { return len(b) - len(a) })
		var errs []error
		for _, p := range under {
			if err := v.unmount(p); err != nil && !errors.Is(err, unix.EINVAL) {
				errs = append(errs, fmt.Errorf("unmounting %s: %w", p, err))
			}
		}
		return under, errors.Join(errs...)
	}
	if _, err := unmountAll(); err != nil {
		return err
	}
	// A mount stacked twice on one point needs a second pass; after it,
	// nothing may remain.
	if left, err := unmountAll(); err != nil || len(left) > 0 {
		return errors.Join(err, fmt.Errorf("mounts remain under %s: %s", dir, strings.Join(left, ", ")))
	}
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("removing the pod's directory: %w", err)
	}
	return nil
}

// readMountPoints lists the mount points of this process's mount namespace.
func readMountPoints() ([]string, error) {
	data, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return nil, err
	}
	return parseMountInfo(string(data)), nil
}

// parseMountInfo takes the mount points (field 5) out of a mountinfo file,
// undoing its octal escapes of spaces, tabs, newlines and backslashes.
func parseMountInfo(data string) []string {
	var points []string
	for _, line := range strings.Split(data, "\n") {
		fields := strings.Fields(line)
		if len(fields) < 5 {
			continue
		}
		points = append(points, unescapeMountInfo(fields[4]))
	}
	return points
}

func unescapeMountInfo(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}
