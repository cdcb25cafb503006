package collect

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strings"

	"github.com/prometheus/procfs/blockdevice"

	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// diskFilesystems are the filesystem types on block devices that cAdvisor
// lists among the machine's filesystems (fs.processMounts; ext* by prefix).
var diskFilesystems = map[string]bool{"btrfs": true, "xfs": true, "zfs": true}

// FilesystemIO is the reads and writes completed (/proc/diskstats) on the
// devices of the node's mounted disk filesystems, once per device, named
// by the mount's source: what cAdvisor's root container counts per
// filesystem. Filesystems without a device of their own (tmpfs, overlay,
// nfs), whose counters cAdvisor reports as 0, are left out.
func (p *Proc) FilesystemIO() ([]*typesv1.DeviceIOStats, error) {
	mounts, err := p.fs.GetMounts()
	if err != nil {
		return nil, err
	}
	counts, err := p.diskstats()
	if err != nil {
		return nil, err
	}
	seen := map[[2]uint32]bool{}
	var out []*typesv1.DeviceIOStats
	for _, m := range mounts {
		if !strings.HasPrefix(m.FSType, "ext") && !diskFilesystems[m.FSType] {
			continue
		}
		major, minor, ok := parseDevice(m.MajorMinorVer)
		key := [2]uint32{major, minor}
		c, counted := counts[key]
		if !ok || !counted || seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, &typesv1.DeviceIOStats{Device: m.Source, Major: major, Minor: minor, Reads: ptr(c[0]), Writes: ptr(c[1])})
	}
	return out, nil
}

// diskstats reads /proc/diskstats: reads and writes completed per device.
func (p *Proc) diskstats() (map[[2]uint32][2]uint64, error) {
	path := filepath.Join(p.root, "diskstats")
	// The sysfs mount point is procfs's default; ProcDiskstats reads none of it.
	disks, err := blockdevice.NewFS(p.root, "")
	if err != nil {
		return nil, err
	}
	stats, err := disks.ProcDiskstats()
	if errors.Is(err, fs.ErrNotExist) {
		return nil, err
	}
	if err != nil {
		return nil, fmt.Errorf("%s: expected \"<major> <minor> <name> <reads> <merged> <sectors> <ms> <writes> ...\" per line: %w", path, err)
	}
	out := make(map[[2]uint32][2]uint64, len(stats))
	for _, d := range stats {
		out[[2]uint32{d.MajorNumber, d.MinorNumber}] = [2]uint64{d.ReadIOs, d.WriteIOs}
	}
	return out, nil
}
