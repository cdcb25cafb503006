package collect

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

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
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := map[[2]uint32][2]uint64{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// major minor name reads merged sectors ms writes ...
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 {
			continue
		}
		var major, minor, reads, writes uint64
		var errs [4]error
		if len(fields) >= 8 {
			major, errs[0] = strconv.ParseUint(fields[0], 10, 32)
			minor, errs[1] = strconv.ParseUint(fields[1], 10, 32)
			reads, errs[2] = strconv.ParseUint(fields[3], 10, 64)
			writes, errs[3] = strconv.ParseUint(fields[7], 10, 64)
		}
		if len(fields) < 8 || errs != [4]error{} {
			return nil, fmt.Errorf("%s: expected \"<major> <minor> <name> <reads> <merged> <sectors> <ms> <writes> ...\", got %q", path, sc.Text())
		}
		out[[2]uint32{uint32(major), uint32(minor)}] = [2]uint64{reads, writes}
	}
	return out, sc.Err()
}
