// Package collect reads what the stats plugin measures on the node:
// cgroup v1 and v2 accounting, /proc, statfs and disk usage walks. Every
// reader takes its root (a cgroupfs mount point, a procfs directory), so
// tests point them at fake trees in temp dirs.
package collect

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/microlet/microlet/plugins/stats/summary"
)

// Cgroups reads cgroup accounting under a cgroupfs mount point, on
// cgroup v1 (a hierarchy per controller; hybrid hosts included) or v2
// (the unified hierarchy mounted there).
type Cgroups struct {
	root string
	v2   bool
	// cpuacct and memory are the v1 hierarchies' directories; cpu and
	// blkio too when mounted ("" otherwise: no CFS or block I/O counters).
	cpuacct, memory, cpu, blkio string
	// sysDevBlock is sysfs's directory of block devices by number, which
	// names the devices of block I/O counters.
	sysDevBlock string
}

// OpenCgroups finds the cgroup layout under root: v2 when root holds
// cgroup.controllers, v1 when it holds the memory and cpuacct hierarchies.
func OpenCgroups(root string) (*Cgroups, error) {
	if _, err := os.Stat(filepath.Join(root, "cgroup.controllers")); err == nil {
		return &Cgroups{root: root, v2: true, sysDevBlock: sysDevBlock}, nil
	}
	c := &Cgroups{root: root, sysDevBlock: sysDevBlock}
	c.cpu = hierarchy(root, "cpu", "cpu,cpuacct", "cpuacct,cpu")
	c.blkio = hierarchy(root, "blkio")
	var missing []string
	for _, h := range []struct {
		dir   *string
		names []string
	}{
		{&c.cpuacct, []string{"cpuacct", "cpu,cpuacct", "cpuacct,cpu"}},
		{&c.memory, []string{"memory"}},
	} {
		if *h.dir = hierarchy(root, h.names...); *h.dir == "" {
			missing = append(missing, strings.Join(h.names, " or "))
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("%s is neither a cgroup v2 mount (no cgroup.controllers) nor a cgroup v1 one (no %s hierarchy)",
			root, strings.Join(missing, ", no "))
	}
	return c, nil
}

// sysDevBlock is where sysfs lists block devices as <major>:<minor>.
const sysDevBlock = "/sys/dev/block"

// hierarchy is the first of names that is a directory under root, as a
// path; "" when none is.
func hierarchy(root string, names ...string) string {
	for _, name := range names {
		if info, err := os.Stat(filepath.Join(root, name)); err == nil && info.IsDir() {
			return filepath.Join(root, name)
		}
	}
	return ""
}

// Version is 1 or 2.
func (c *Cgroups) Version() int {
	if c.v2 {
		return 2
	}
	return 1
}

// Read reads the accounting of the cgroup at path (relative to the
// hierarchy's root, "/kubepods/besteffort/pod<uid>"). An error wraps
// fs.ErrNotExist when the cgroup does not exist. Its CFS periods and block
// I/O, which only /metrics/cadvisor exports, are read with counters alone:
// a cpu-and-memory summary has no use for them.
func (c *Cgroups) Read(path string, counters bool) (summary.CgroupSample, error) {
	if c.v2 {
		return c.readV2(path, counters)
	}
	return c.readV1(path, counters)
}

// Created is when the cgroup at path was made, as cadvisor takes it: the
// modification time of its directory.
func (c *Cgroups) Created(path string) (time.Time, error) {
	info, err := os.Stat(c.dir(path))
	if err != nil {
		return time.Time{}, err
	}
	return info.ModTime(), nil
}

// Processes counts the processes in the cgroup at path.
func (c *Cgroups) Processes(path string) (uint64, error) {
	return countLines(filepath.Join(c.dir(path), "cgroup.procs"))
}

// FirstProcess is the first pid the cgroup at path lists; a sandbox's
// cgroup holds its pause process alone.
func (c *Cgroups) FirstProcess(path string) (int, error) {
	return firstLine(filepath.Join(c.dir(path), "cgroup.procs"))
}

// ContainerPath is where the runtime put a container of the pod cgroup
// podPath: <pod>/<id> with the cgroupfs driver, <pod>/cri-containerd-<id>.scope
// with systemd's. It is "" when neither exists.
func (c *Cgroups) ContainerPath(podPath, containerID string) string {
	for _, name := range []string{containerID, "cri-containerd-" + containerID + ".scope"} {
		path := filepath.Join(podPath, name)
		if _, err := os.Stat(c.dir(path)); err == nil {
			return path
		}
	}
	return ""
}

// dir is the directory of the cgroup at path in the hierarchy that holds
// its processes (v1: the memory controller's).
func (c *Cgroups) dir(path string) string {
	if c.v2 {
		return filepath.Join(c.root, path)
	}
	return filepath.Join(c.memory, path)
}

// CgroupPath turns a cgroup parent as the runtime takes it into a path
// below the hierarchy's root: a systemd slice name
// ("kubepods-burstable-pod<uid>.slice") expands to its place in the tree
// (/kubepods.slice/kubepods-burstable.slice/...), as systemd nests
// slices; anything else is already a path.
func CgroupPath(parent string) string {
	if parent == "" || strings.Contains(parent, "/") || !strings.HasSuffix(parent, ".slice") {
		return parent
	}
	name := strings.TrimSuffix(parent, ".slice")
	var path, prefix string
	for part := range strings.SplitSeq(name, "-") {
		if prefix != "" {
			prefix += "-"
		}
		prefix += part
		path += "/" + prefix + ".slice"
	}
	return path
}

// optional turns a missing control file into "not accounted" (nil) and
// keeps every other error.
func optional[T any](v T, err error) (*T, error) {
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// mustExist fails with an error wrapping fs.ErrNotExist when the cgroup
// directory is missing, so that callers can tell a vanished cgroup from a
// controller that is not enabled.
func mustExist(dir string) error {
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("cgroup %s: %w", dir, err)
	}
	return nil
}
