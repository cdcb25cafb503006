package collect

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/prometheus/procfs"
	"google.golang.org/protobuf/proto"

	"github.com/microlet/microlet/plugins/stats/summary"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// writeTree writes files (path relative to root -> content) under root.
func writeTree(t *testing.T, root string, files map[string]string) {
	t.Helper()
	for path, content := range files {
		full := filepath.Join(root, path)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

const v1MemoryStat = `cache 0
rss 0
total_cache 4096
total_rss 679936
total_pgfault 1584
total_pgmajfault 3
total_inactive_anon 671744
total_inactive_file 8192
total_swap 512
`

const v2MemoryStat = `anon 700000
file 9000
inactive_file 4000
active_file 5000
pgfault 321
pgmajfault 7
`

const pressure = `some avg10=1.50 avg60=0.25 avg300=0.00 total=1234
full avg10=0.00 avg60=0.00 avg300=0.00 total=56
`

func u(v uint64) *uint64 { return &v }

// v1Tree is a cgroup v1 mount with a pod cgroup and one container.
func v1Tree(t *testing.T) string {
	root := t.TempDir()
	pod := "kubepods/besteffort/pod1"
	writeTree(t, root, map[string]string{
		"cpuacct/cpuacct.usage":                          "99000000000\n",
		"memory/memory.usage_in_bytes":                   "5000000\n",
		"memory/memory.limit_in_bytes":                   "9223372036854771712\n",
		"memory/memory.stat":                             v1MemoryStat,
		"cpuacct/" + pod + "/cpuacct.usage":              "123456789\n",
		"memory/" + pod + "/memory.usage_in_bytes":       "700000\n",
		"memory/" + pod + "/memory.limit_in_bytes":       "1048576\n",
		"memory/" + pod + "/memory.stat":                 v1MemoryStat,
		"memory/" + pod + "/c1/cgroup.procs":             "12\n13\n14\n",
		"memory/" + pod + "/nocpu/memory.usage_in_bytes": "1\n",
		"memory/" + pod + "/nocpu/memory.limit_in_bytes": "2\n",
		"memory/" + pod + "/nocpu/memory.stat":           "",
		"cpu/cpu.cfs_quota_us":                           "-1\n",
		"cpu/cpu.stat":                                   "nr_periods 0\nnr_throttled 0\nthrottled_time 0\n",
		"cpu/" + pod + "/cpu.cfs_quota_us":               "50000\n",
		"cpu/" + pod + "/cpu.stat":                       "nr_periods 120\nnr_throttled 30\nthrottled_time 99\n",
		// bfq's counters list nothing: blk-throttle's are taken, as runc does.
		"blkio/" + pod + "/blkio.bfq.io_serviced_recursive":           "Total 0\n",
		"blkio/" + pod + "/blkio.bfq.io_service_bytes_recursive":      "Total 0\n",
		"blkio/" + pod + "/blkio.throttle.io_serviced_recursive":      blkioServiced,
		"blkio/" + pod + "/blkio.throttle.io_service_bytes_recursive": blkioBytes,
		"blkio/" + pod + "/blkio.throttle.io_serviced":                "Total 0\n",
		"blkio/blkio.throttle.io_serviced":                            "Total 0\n",
	})
	blockDevices(t, root)
	// The unified hierarchy of a hybrid host must not make it look like v2.
	writeTree(t, root, map[string]string{"unified/cgroup.controllers": ""})
	return root
}

// v2Tree is a cgroup v2 mount with a pod cgroup and one container.
func v2Tree(t *testing.T) string {
	root := t.TempDir()
	pod := "kubepods/burstable/pod2"
	writeTree(t, root, map[string]string{
		"cgroup.controllers":                          "cpu memory pids io\n",
		"cpu.stat":                                    "usage_usec 88000000\nuser_usec 1\n",
		"memory.stat":                                 v2MemoryStat,
		pod + "/cpu.stat":                             "usage_usec 2500\nuser_usec 2000\nsystem_usec 500\n",
		pod + "/memory.current":                       "800000\n",
		pod + "/memory.max":                           "max\n",
		pod + "/memory.stat":                          v2MemoryStat,
		pod + "/memory.swap.current":                  "4096\n",
		pod + "/memory.swap.max":                      "1000000\n",
		pod + "/cpu.pressure":                         pressure,
		pod + "/memory.pressure":                      pressure,
		pod + "/io.pressure":                          pressure,
		pod + "/cri-containerd-c2.scope/cgroup.procs": "7\n",
		pod + "/cpu.max":                              "50000 100000\n",
		pod + "/io.stat":                              "8:0 rbytes=4096 wbytes=8192 rios=1 wios=2 dbytes=0 dios=0\n253:1 rbytes=0 wbytes=512 rios=0 wios=1 dbytes=0 dios=0\n",
		"kubepods/cpu.max":                            "max 100000\n",
		"kubepods/cpu.stat":                           "usage_usec 3000\nnr_periods 0\nnr_throttled 0\n",
	})
	writeTree(t, root, map[string]string{pod + "/cpu.stat": "usage_usec 2500\nuser_usec 2000\nsystem_usec 500\nnr_periods 9\nnr_throttled 2\n"})
	blockDevices(t, root)
	return root
}

const blkioServiced = `8:0 Read 10
8:0 Write 4
8:0 Sync 14
8:0 Async 0
8:0 Discard 0
8:0 Total 14
253:1 Read 0
253:1 Write 1
253:1 Total 1
Total 15
`

const blkioBytes = `8:0 Read 40960
8:0 Write 16384
8:0 Total 57344
253:1 Read 0
253:1 Write 512
253:1 Total 512
Total 57856
`

// blockDevices gives the tree a sysfs of block devices (sys/dev/block
// under root) that knows 8:0 as sda and not 253:1, and points the tree's
// readers at it.
func blockDevices(t *testing.T, root string) {
	t.Helper()
	dir := filepath.Join(root, "sys/dev/block")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("../../devices/pci0000:00/0000:00:05.0/virtio2/block/sda", filepath.Join(dir, "8:0")); err != nil {
		t.Fatal(err)
	}
}

// openTree opens the cgroup tree at root with its block devices.
func openTree(t *testing.T, root string) *Cgroups {
	t.Helper()
	c, err := OpenCgroups(root)
	if err != nil {
		t.Fatal(err)
	}
	c.sysDevBlock = filepath.Join(root, "sys/dev/block")
	return c
}

func TestOpenCgroups(t *testing.T) {
	tests := []struct {
		name    string
		files   map[string]string
		version int
		err     string
	}{
		{"v2", map[string]string{"cgroup.controllers": ""}, 2, ""},
		{"v1", map[string]string{"memory/memory.stat": "", "cpuacct/cpuacct.usage": "0"}, 1, ""},
		{"v1 with cpu and cpuacct mounted together", map[string]string{"memory/tasks": "", "cpu,cpuacct/tasks": ""}, 1, ""},
		{"neither", map[string]string{"memory/tasks": ""}, 0, "nor a cgroup v1 one (no cpuacct or cpu,cpuacct or cpuacct,cpu hierarchy)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			root := t.TempDir()
			writeTree(t, root, tt.files)
			c, err := OpenCgroups(root)
			if tt.err != "" {
				if err == nil || !strings.Contains(err.Error(), tt.err) {
					t.Fatalf("OpenCgroups: %v, want an error containing %q", err, tt.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.Version() != tt.version {
				t.Errorf("version %d, want %d", c.Version(), tt.version)
			}
		})
	}
}

func TestReadCgroup(t *testing.T) {
	psi := &typesv1.PSIStats{
		Some: &typesv1.PSIData{Avg10: 1.5, Avg60: 0.25, Total: 1234},
		Full: &typesv1.PSIData{Total: 56},
	}
	tests := []struct {
		name string
		tree func(*testing.T) string
		path string
		want summary.CgroupSample
	}{
		{"v1 pod", v1Tree, "/kubepods/besteffort/pod1", summary.CgroupSample{
			CPUUsageNanos: u(123456789),
			Memory:        &summary.MemorySample{Usage: 700000, InactiveFile: 8192, RSS: 679936, Cache: 4096, PageFaults: 1584, MajorPageFaults: 3, Limit: u(1048576)},
			SwapUsage:     u(512),
			CFS:           &summary.CFSSample{Periods: 120, ThrottledPeriods: 30},
			DiskIO: []*typesv1.DeviceIOStats{
				{Device: "/dev/sda", Major: 8, Minor: 0, Reads: u(10), Writes: u(4), ReadBytes: u(40960), WriteBytes: u(16384)},
				{Device: "", Major: 253, Minor: 1, Reads: u(0), ReadBytes: u(0), Writes: u(1), WriteBytes: u(512)},
			},
		}},
		{"v1 root: no quota, no block I/O counted", v1Tree, "/", summary.CgroupSample{
			CPUUsageNanos: u(99e9),
			Memory:        &summary.MemorySample{Usage: 5000000, InactiveFile: 8192, RSS: 679936, Cache: 4096, PageFaults: 1584, MajorPageFaults: 3, Limit: u(9223372036854771712)},
			SwapUsage:     u(512),
		}},
		{"v1 cgroup without cpu accounting", v1Tree, "/kubepods/besteffort/pod1/nocpu", summary.CgroupSample{
			Memory: &summary.MemorySample{Usage: 1, Limit: u(2)},
		}},
		{"v2 pod", v2Tree, "/kubepods/burstable/pod2", summary.CgroupSample{
			CPUUsageNanos: u(2500000),
			Memory:        &summary.MemorySample{Usage: 800000, InactiveFile: 4000, RSS: 700000, Cache: 9000, PageFaults: 321, MajorPageFaults: 7},
			SwapUsage:     u(4096), SwapLimit: u(1000000),
			CPUPressure: psi, MemoryPressure: psi, IOPressure: psi,
			CFS: &summary.CFSSample{Periods: 9, ThrottledPeriods: 2},
			DiskIO: []*typesv1.DeviceIOStats{
				{Device: "/dev/sda", Major: 8, Minor: 0, Reads: u(1), Writes: u(2), ReadBytes: u(4096), WriteBytes: u(8192)},
				{Device: "", Major: 253, Minor: 1, Reads: u(0), ReadBytes: u(0), Writes: u(1), WriteBytes: u(512)},
			},
		}},
		{"v2 cgroup without a quota", v2Tree, "/kubepods", summary.CgroupSample{CPUUsageNanos: u(3000000)}},
		{"v2 cgroup with no controller enabled", v2Tree, "/kubepods/burstable/pod2/cri-containerd-c2.scope", summary.CgroupSample{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := openTree(t, tt.tree(t))
			got, err := c.Read(tt.path, true)
			if err != nil {
				t.Fatal(err)
			}
			if got.Time.IsZero() {
				t.Error("the sample has no time")
			}
			got.Time = tt.want.Time
			assertSample(t, got, tt.want)

			// A cpu-and-memory summary reads neither CFS periods nor block I/O.
			lean, err := c.Read(tt.path, false)
			if err != nil {
				t.Fatal(err)
			}
			want := tt.want
			lean.Time, want.CFS, want.DiskIO = tt.want.Time, nil, nil
			assertSample(t, lean, want)
		})
	}
}

func assertSample(t *testing.T, got, want summary.CgroupSample) {
	t.Helper()
	protoEqual := proto.Equal(got.CPUPressure, want.CPUPressure) && proto.Equal(got.MemoryPressure, want.MemoryPressure) &&
		proto.Equal(got.IOPressure, want.IOPressure) && len(got.DiskIO) == len(want.DiskIO)
	for i := range min(len(got.DiskIO), len(want.DiskIO)) {
		protoEqual = protoEqual && proto.Equal(got.DiskIO[i], want.DiskIO[i])
	}
	g, w := got, want
	g.CPUPressure, g.MemoryPressure, g.IOPressure, g.DiskIO = nil, nil, nil, nil
	w.CPUPressure, w.MemoryPressure, w.IOPressure, w.DiskIO = nil, nil, nil, nil
	if !protoEqual || !reflect.DeepEqual(g, w) {
		t.Errorf("got  %s\nwant %s", describe(got), describe(want))
	}
}

// describe prints a sample with its pointers followed.
func describe(s summary.CgroupSample) string {
	v := func(p *uint64) string {
		if p == nil {
			return "-"
		}
		return strconv.FormatUint(*p, 10)
	}
	out := fmt.Sprintf("cpu=%s swap=%s swaplimit=%s", v(s.CPUUsageNanos), v(s.SwapUsage), v(s.SwapLimit))
	if m := s.Memory; m != nil {
		out += fmt.Sprintf(" memory{usage=%d inactive=%d rss=%d cache=%d pgfault=%d pgmajfault=%d limit=%s}",
			m.Usage, m.InactiveFile, m.RSS, m.Cache, m.PageFaults, m.MajorPageFaults, v(m.Limit))
	}
	if s.CFS != nil {
		out += fmt.Sprintf(" cfs{%+v}", *s.CFS)
	}
	return out + fmt.Sprintf(" psi{%v | %v | %v} io%v", s.CPUPressure, s.MemoryPressure, s.IOPressure, s.DiskIO)
}

func TestReadCgroupErrors(t *testing.T) {
	for _, tree := range []func(*testing.T) string{v1Tree, v2Tree} {
		c, err := OpenCgroups(tree(t))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Read("/kubepods/gone", true); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("v%d: reading a missing cgroup: %v, want fs.ErrNotExist", c.Version(), err)
		}
	}
	root := v2Tree(t)
	writeTree(t, root, map[string]string{"bad/memory.current": "lots\n"})
	c, _ := OpenCgroups(root)
	if _, err := c.Read("/bad", true); err == nil || !strings.Contains(err.Error(), `memory.current: expected an unsigned number, got "lots"`) {
		t.Errorf("a malformed control file: %v, want an error naming the file and the value", err)
	}
	writeTree(t, root, map[string]string{"badpsi/cpu.pressure": "some avg10=x\n"})
	if _, err := c.Read("/badpsi", true); err == nil || !strings.Contains(err.Error(), "cpu.pressure") {
		t.Errorf("a malformed pressure file: %v, want an error naming it", err)
	}
	writeTree(t, root, map[string]string{"badio/io.stat": "sda rbytes=1\n", "badio2/io.stat": "8:0 rbytes=x\n"})
	for _, path := range []string{"/badio", "/badio2"} {
		if _, err := c.Read(path, true); err == nil || !strings.Contains(err.Error(), "io.stat") {
			t.Errorf("a malformed io.stat: %v, want an error naming it", err)
		}
	}
	root1 := v1Tree(t)
	writeTree(t, root1, map[string]string{"memory/bad/memory.stat": "", "blkio/bad/blkio.throttle.io_serviced_recursive": "8:0 Read many\n"})
	c1, _ := OpenCgroups(root1)
	if _, err := c1.Read("/bad", true); err == nil || !strings.Contains(err.Error(), `blkio.throttle.io_serviced_recursive: expected "<major>:<minor> <op> <count>", got "8:0 Read many"`) {
		t.Errorf("a malformed blkio file: %v, want an error naming it and the line", err)
	}
}

func TestReadRootV2FromMeminfo(t *testing.T) {
	total, free, inactive, anon := uint64(8000), uint64(3000), uint64(1000), uint64(2000)
	meminfo := procfs.Meminfo{MemTotalBytes: &total, MemFreeBytes: &free, InactiveFileBytes: &inactive, AnonPagesBytes: &anon}

	root := v2Tree(t)
	c, _ := OpenCgroups(root)
	got, err := c.ReadRoot(meminfo, true)
	if err != nil {
		t.Fatal(err)
	}
	// Usage from meminfo, the rest from the root's memory.stat.
	want := summary.MemorySample{Usage: 5000, InactiveFile: 4000, RSS: 700000, Cache: 9000, PageFaults: 321, MajorPageFaults: 7}
	if got.Memory == nil || *got.Memory != want || got.CPUUsageNanos == nil || *got.CPUUsageNanos != 88e9 {
		t.Errorf("root with memory.stat: %s", describe(got))
	}

	if err := os.Remove(filepath.Join(root, "memory.stat")); err != nil {
		t.Fatal(err)
	}
	got, err = c.ReadRoot(meminfo, true)
	if err != nil {
		t.Fatal(err)
	}
	want = summary.MemorySample{Usage: 5000, InactiveFile: 1000, RSS: 2000}
	if got.Memory == nil || *got.Memory != want {
		t.Errorf("root without memory.stat: %s", describe(got))
	}

	// On v1 the root has its own counters; meminfo is not used.
	c1, _ := OpenCgroups(v1Tree(t))
	got, err = c1.ReadRoot(meminfo, true)
	if err != nil || got.Memory == nil || got.Memory.Usage != 5000000 {
		t.Errorf("v1 root: %s, %v", describe(got), err)
	}
}

func TestContainerProcesses(t *testing.T) {
	tests := []struct {
		name          string
		tree          func(*testing.T) string
		pod, id, path string
		procs         uint64
	}{
		{"v1 cgroupfs driver", v1Tree, "/kubepods/besteffort/pod1", "c1", "/kubepods/besteffort/pod1/c1", 3},
		{"v2 systemd driver", v2Tree, "/kubepods/burstable/pod2", "c2", "/kubepods/burstable/pod2/cri-containerd-c2.scope", 1},
		{"unknown container", v2Tree, "/kubepods/burstable/pod2", "c9", "", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, _ := OpenCgroups(tt.tree(t))
			path := c.ContainerPath(tt.pod, tt.id)
			if path != tt.path {
				t.Fatalf("ContainerPath = %q, want %q", path, tt.path)
			}
			if path == "" {
				return
			}
			n, err := c.Processes(path)
			if err != nil || n != tt.procs {
				t.Errorf("Processes = %d, %v; want %d", n, err, tt.procs)
			}
			if created, err := c.Created(path); err != nil || created.IsZero() {
				t.Errorf("Created = %v, %v", created, err)
			}
		})
	}
}

func TestCgroupPath(t *testing.T) {
	for parent, want := range map[string]string{
		"/kubepods/burstable/pod1":          "/kubepods/burstable/pod1",
		"":                                  "",
		"kubepods.slice":                    "/kubepods.slice",
		"kubepods-burstable-pod1_2_3.slice": "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod1_2_3.slice",
		"/kubepods.slice/kubepods-besteffort.slice": "/kubepods.slice/kubepods-besteffort.slice",
	} {
		if got := CgroupPath(parent); got != want {
			t.Errorf("CgroupPath(%q) = %q, want %q", parent, got, want)
		}
	}
}

func TestFirstProcess(t *testing.T) {
	c, _ := OpenCgroups(v1Tree(t))
	if pid, err := c.FirstProcess("/kubepods/besteffort/pod1/c1"); err != nil || pid != 12 {
		t.Errorf("FirstProcess = %d, %v; want 12", pid, err)
	}
	root := v2Tree(t)
	writeTree(t, root, map[string]string{"empty/cgroup.procs": ""})
	c, _ = OpenCgroups(root)
	if _, err := c.FirstProcess("/empty"); err == nil || !strings.Contains(err.Error(), "expected a pid on the first line") {
		t.Errorf("FirstProcess of an empty cgroup: %v", err)
	}
}

func TestCgroupCounters(t *testing.T) {
	tests := []struct {
		name string
		tree func(*testing.T) string
		path string
		want summary.CgroupCounters
	}{
		{"v1", v1Tree, "/kubepods/besteffort/pod1", summary.CgroupCounters{
			Cache: u(4096), CFS: &summary.CFSSample{Periods: 120, ThrottledPeriods: 30},
			DiskIO: []*typesv1.DeviceIOStats{
				{Device: "/dev/sda", Major: 8, Minor: 0, Reads: u(10), Writes: u(4), ReadBytes: u(40960), WriteBytes: u(16384)},
				{Device: "", Major: 253, Minor: 1, Reads: u(0), ReadBytes: u(0), Writes: u(1), WriteBytes: u(512)},
			},
		}},
		{"v1 without cpu or blkio files", v1Tree, "/kubepods/besteffort/pod1/nocpu", summary.CgroupCounters{}},
		{"v2", v2Tree, "/kubepods/burstable/pod2", summary.CgroupCounters{
			Cache: u(9000), CFS: &summary.CFSSample{Periods: 9, ThrottledPeriods: 2},
			DiskIO: []*typesv1.DeviceIOStats{
				{Device: "/dev/sda", Major: 8, Minor: 0, Reads: u(1), Writes: u(2), ReadBytes: u(4096), WriteBytes: u(8192)},
				{Device: "", Major: 253, Minor: 1, Reads: u(0), ReadBytes: u(0), Writes: u(1), WriteBytes: u(512)},
			},
		}},
		{"v2 without controllers", v2Tree, "/kubepods/burstable/pod2/cri-containerd-c2.scope", summary.CgroupCounters{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := openTree(t, tt.tree(t))
			got, err := c.Counters(tt.path)
			if err != nil {
				t.Fatal(err)
			}
			if got.Time.IsZero() {
				t.Error("the counters have no time")
			}
			// The same as the whole sample's, read the same way.
			assertSample(t, summary.CgroupSample{CFS: got.CFS, DiskIO: got.DiskIO}, summary.CgroupSample{CFS: tt.want.CFS, DiskIO: tt.want.DiskIO})
			if !reflect.DeepEqual(got.Cache, tt.want.Cache) {
				t.Errorf("cache %s, want %s", fmt.Sprint(deref(got.Cache)), fmt.Sprint(deref(tt.want.Cache)))
			}
		})
	}
}
