package collect

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/microlet/microlet/plugins/stats/summary"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// cpu.stat keys of CFS bandwidth control, on v1 and v2 alike.
const (
	cfsPeriods   = "nr_periods"
	cfsThrottled = "nr_throttled"
)

// Counters reads the cgroup at path for what a container's runtime stats
// lack: the page cache (memory.stat), CFS periods and block I/O. It reads
// nothing else, as it runs for every container of every summary.
func (c *Cgroups) Counters(path string) (summary.CgroupCounters, error) {
	out := summary.CgroupCounters{Time: time.Now()}
	key := v2File
	if !c.v2 {
		key = v1Cache
	}
	stat, err := optional(readKeyValues(filepath.Join(c.dir(path), "memory.stat"), key))
	if err != nil {
		return out, err
	}
	if stat != nil {
		if v, ok := (*stat)[key]; ok {
			out.Cache = &v
		}
	}
	out.CFS, out.DiskIO, err = c.cfsAndIO(path, nil)
	return out, err
}

// cfsAndIO reads the CFS periods and block I/O of the cgroup at path. On
// v2, cpuStat is its cpu.stat when the caller read it already (with the
// CFS keys), so that the file is read once; nil reads it.
func (c *Cgroups) cfsAndIO(path string, cpuStat map[string]uint64) (*summary.CFSSample, []*typesv1.DeviceIOStats, error) {
	if c.v2 {
		dir := filepath.Join(c.root, path)
		cfs, err := readCFS(dir, "cpu.max", cpuStat, "max")
		if err != nil {
			return nil, nil, err
		}
		io, err := c.ioV2(dir)
		return cfs, io, err
	}
	var cfs *summary.CFSSample
	var io []*typesv1.DeviceIOStats
	var err error
	if c.cpu != "" {
		if cfs, err = readCFS(filepath.Join(c.cpu, path), "cpu.cfs_quota_us", nil, "-1", "0"); err != nil {
			return nil, nil, err
		}
	}
	if c.blkio != "" {
		io, err = c.blkioV1(filepath.Join(c.blkio, path))
	}
	return cfs, io, err
}

// readCFS reads the CFS periods of the cgroup in dir; nil when it has no
// quota, as cAdvisor exports them only for a cgroup with one: quotaFile
// (v1 cpu.cfs_quota_us, v2 cpu.max "<quota> <period>") is missing (the cpu
// controller is not enabled there) or its quota is one of none. stat is
// the cgroup's cpu.stat if already read; nil reads it.
func readCFS(dir, quotaFile string, stat map[string]uint64, none ...string) (*summary.CFSSample, error) {
	b, err := os.ReadFile(filepath.Join(dir, quotaFile))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if quota, _, _ := strings.Cut(string(bytes.TrimSpace(b)), " "); slices.Contains(none, quota) {
		return nil, nil
	}
	if stat == nil {
		if stat, err = readKeyValues(filepath.Join(dir, "cpu.stat"), cfsPeriods, cfsThrottled); err != nil {
			return nil, err
		}
	}
	return &summary.CFSSample{Periods: stat[cfsPeriods], ThrottledPeriods: stat[cfsThrottled]}, nil
}

// blkioV1Files are the pairs of v1 blkio files (operations, bytes) that
// may count a cgroup's block I/O, in the order runc's blkio GetStats (and
// so cAdvisor) tries them: the first whose operations file lists a device
// is taken. Which count anything depends on the kernel and the devices'
// I/O schedulers (bfq, cfq, or blk-throttle's counters).
var blkioV1Files = [][2]string{
	{"blkio.bfq.io_serviced_recursive", "blkio.bfq.io_service_bytes_recursive"},
	{"blkio.io_serviced_recursive", "blkio.io_service_bytes_recursive"},
	{blkioThrottleRecursive, "blkio.throttle.io_service_bytes_recursive"},
	{"blkio.throttle.io_serviced", "blkio.throttle.io_service_bytes"},
}

// blkioThrottleRecursive counts what blkio.throttle.io_serviced counts and
// more (the descendants'): when it lists nothing, neither does the other.
const blkioThrottleRecursive = "blkio.throttle.io_serviced_recursive"

// blkioV1 reads a v1 blkio cgroup's I/O per device; nil when no file
// counts any.
func (c *Cgroups) blkioV1(dir string) ([]*typesv1.DeviceIOStats, error) {
	for _, files := range blkioV1Files {
		ops, err := readBlkio(filepath.Join(dir, files[0]))
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			return nil, err
		}
		if len(ops) == 0 {
			if files[0] == blkioThrottleRecursive {
				return nil, nil
			}
			continue
		}
		bytes, err := readBlkio(filepath.Join(dir, files[1]))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return nil, err
		}
		devices := map[[2]uint32]*typesv1.DeviceIOStats{}
		for _, e := range ops {
			d := c.device(devices, e.major, e.minor)
			switch e.op {
			case "Read":
				d.Reads = ptr(e.value)
			case "Write":
				d.Writes = ptr(e.value)
			}
		}
		for _, e := range bytes {
			d := c.device(devices, e.major, e.minor)
			switch e.op {
			case "Read":
				d.ReadBytes = ptr(e.value)
			case "Write":
				d.WriteBytes = ptr(e.value)
			}
		}
		return sortedDevices(devices), nil
	}
	return nil, nil
}

// blkioEntry is one line of a v1 blkio file: "<major>:<minor> <op> <value>".
type blkioEntry struct {
	major, minor uint32
	op           string
	value        uint64
}

// readBlkio reads a v1 blkio file, leaving out its "Total" line.
func readBlkio(path string) ([]blkioEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []blkioEntry
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 0 || (len(fields) == 2 && fields[0] == "Total") {
			continue
		}
		var e blkioEntry
		var ok bool
		if len(fields) == 3 {
			e.major, e.minor, ok = parseDevice(fields[0])
			e.op = fields[1]
			e.value, err = strconv.ParseUint(fields[2], 10, 64)
		}
		if !ok || err != nil {
			return nil, fmt.Errorf("%s: expected \"<major>:<minor> <op> <count>\", got %q", path, sc.Text())
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// io.stat keys of cgroup v2.
var ioStatKeys = []string{"rbytes", "wbytes", "rios", "wios"}

// ioV2 reads a v2 cgroup's io.stat ("<major>:<minor> rbytes=.. wbytes=..
// rios=.. wios=.. ..."), which counts the cgroup and its descendants; nil
// when the io controller is not enabled there.
func (c *Cgroups) ioV2(dir string) ([]*typesv1.DeviceIOStats, error) {
	path := filepath.Join(dir, "io.stat")
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	devices := map[[2]uint32]*typesv1.DeviceIOStats{}
	for line := range strings.Lines(string(b)) {
		fields := strings.Fields(line)
		if len(fields) == 0 {
			continue
		}
		major, minor, ok := parseDevice(fields[0])
		if !ok {
			return nil, fmt.Errorf("%s: expected \"<major>:<minor> key=value...\", got %q", path, strings.TrimSpace(line))
		}
		d := c.device(devices, major, minor)
		for _, kv := range fields[1:] {
			key, value, _ := strings.Cut(kv, "=")
			if !slices.Contains(ioStatKeys, key) {
				continue
			}
			v, err := strconv.ParseUint(value, 10, 64)
			if err != nil {
				return nil, fmt.Errorf("%s: %s: expected an unsigned number, got %q", path, key, value)
			}
			switch key {
			case "rbytes":
				d.ReadBytes = ptr(v)
			case "wbytes":
				d.WriteBytes = ptr(v)
			case "rios":
				d.Reads = ptr(v)
			case "wios":
				d.Writes = ptr(v)
			}
		}
	}
	return sortedDevices(devices), nil
}

func parseDevice(s string) (major, minor uint32, ok bool) {
	ma, mi, found := strings.Cut(s, ":")
	maj, err1 := strconv.ParseUint(ma, 10, 32)
	min, err2 := strconv.ParseUint(mi, 10, 32)
	return uint32(maj), uint32(min), found && err1 == nil && err2 == nil
}

// device is the entry of devices for major:minor, made and named on first
// use.
func (c *Cgroups) device(devices map[[2]uint32]*typesv1.DeviceIOStats, major, minor uint32) *typesv1.DeviceIOStats {
	key := [2]uint32{major, minor}
	if d, ok := devices[key]; ok {
		return d
	}
	d := &typesv1.DeviceIOStats{Device: c.deviceName(major, minor), Major: major, Minor: minor}
	devices[key] = d
	return d
}

// deviceName is the block device's node, "/dev/<name>", as cAdvisor names
// it from the machine's disks; "" when sysfs knows no such device.
func (c *Cgroups) deviceName(major, minor uint32) string {
	target, err := os.Readlink(filepath.Join(c.sysDevBlock, fmt.Sprintf("%d:%d", major, minor)))
	if err != nil {
		return ""
	}
	return "/dev/" + filepath.Base(target)
}

func sortedDevices(devices map[[2]uint32]*typesv1.DeviceIOStats) []*typesv1.DeviceIOStats {
	out := make([]*typesv1.DeviceIOStats, 0, len(devices))
	for _, d := range devices {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b *typesv1.DeviceIOStats) int {
		if a.Major != b.Major {
			return int(a.Major) - int(b.Major)
		}
		return int(a.Minor) - int(b.Minor)
	})
	if len(out) == 0 {
		return nil
	}
	return out
}
