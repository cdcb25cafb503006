package provider

import (
	"context"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/microlet/microlet/internal/prereq"
	hostv1 "github.com/microlet/microlet/proto/microlet/host/v1"
	statsv1 "github.com/microlet/microlet/proto/microlet/stats/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/sdktest"
)

var info = sdk.Info{Kind: sdk.KindStats, Name: "default", Version: "0.1.0"}

// serve runs the plugin in-process over the fixture's host service and
// configures it with block.
func serve(t *testing.T, f *fixture, block map[string]any) *sdktest.Harness {
	t.Helper()
	p := &Plugin{}
	h := sdktest.InProcess(t, info, p, sdktest.WithHostService(f.host), sdktest.WithNodeName("node-a"))
	if err := h.Configure(block); err != nil {
		t.Fatalf("Configure: %v", err)
	}
	// Stops the disk usage walker; t.Context is over by cleanup time, so
	// this calls the plugin directly rather than through the harness.
	t.Cleanup(func() {
		if err := p.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
	})
	return h
}

// getSummary gathers one GetSummary stream.
func getSummary(t *testing.T, h *sdktest.Harness, req *statsv1.GetSummaryRequest) (*typesv1.NodeStats, []*typesv1.PodStats, error) {
	t.Helper()
	stream, err := h.Stats().GetSummary(t.Context(), req)
	if err != nil {
		return nil, nil, err
	}
	var node *typesv1.NodeStats
	var pods []*typesv1.PodStats
	for {
		resp, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return node, pods, nil
		}
		if err != nil {
			return nil, nil, err
		}
		if n := resp.GetNode(); n != nil {
			node = n
		} else {
			pods = append(pods, resp.GetPod())
		}
	}
}

func TestSummary(t *testing.T) {
	f := newFixture(t)
	h := serve(t, f, f.config())

	node, pods, err := getSummary(t, h, &statsv1.GetSummaryRequest{Fresh: true})
	if err != nil {
		t.Fatal(err)
	}
	checks := []struct {
		what      string
		got, want any
	}{
		{"node name", node.GetNodeName(), "node-a"},
		{"node start time (btime)", node.GetStartTime().AsTime(), time.Unix(1700000000, 0).UTC()},
		{"node cpu (root cpu.stat)", node.GetCpu().GetUsageCoreNanoSeconds(), uint64(50e9)},
		// v2 root: usage = MemTotal - MemFree = 512Mi, less inactive file.
		{"node working set", node.GetMemory().GetWorkingSetBytes(), uint64(512<<20 - 1<<20)},
		{"node memory available", node.GetMemory().GetAvailableBytes(), uint64(1<<30 - (512<<20 - 1<<20))},
		{"node memory pressure", node.GetMemory().GetPsi().GetSome().GetTotal(), uint64(5)},
		{"node swap used", node.GetSwap().GetSwapUsageBytes(), uint64(0)},
		{"pods system container", node.GetSystemContainers()[0].GetName(), "pods"},
		{"pods working set", node.GetSystemContainers()[0].GetMemory().GetWorkingSetBytes(), uint64(3000000)},
		{"nodefs capacity known", node.GetFs().GetCapacityBytes() > 0, true},
		{"imagefs used (the runtime's)", node.GetRuntime().GetImageFs().GetUsedBytes(), uint64(1 << 20)},
		{"imagefs capacity (statfs)", node.GetRuntime().GetImageFs().GetCapacityBytes() > 0, true},
		{"rlimit", node.GetRlimit().GetMaxPid(), int64(32768)},
		{"tasks", node.GetRlimit().GetNumOfRunningProcesses(), int64(77)},
		{"node network", node.GetNetwork().GetInterfaces()[0].GetRxBytes(), uint64(10)},
		{"pods listed (only those running something)", len(pods), 1},
	}
	for _, c := range checks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	pod := pods[0]
	app := pod.GetContainers()
	podChecks := []struct {
		what      string
		got, want any
	}{
		{"pod", pod.GetPodRef().GetName(), "web"},
		{"containers (running ones)", len(app), 1},
		{"container", app[0].GetName(), "app"},
		{"container start", app[0].GetStartTime().AsTime(), time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)},
		{"container cpu (the runtime's)", app[0].GetCpu().GetUsageNanoCores(), uint64(1000)},
		{"container rootfs", app[0].GetRootfs().GetUsedBytes(), uint64(8192)},
		{"container logs measured", app[0].GetLogs().GetUsedBytes() > 0 && app[0].GetLogs().GetInodesUsed() == 1, true},
		{"pod cpu (pod cgroup)", pod.GetCpu().GetUsageCoreNanoSeconds(), uint64(2e9)},
		{"pod working set (pod cgroup)", pod.GetMemory().GetWorkingSetBytes(), uint64(2500000)},
		{"pod available (limit - working set)", pod.GetMemory().GetAvailableBytes(), uint64(7500000)},
		{"pod network (the sandbox's namespace)", pod.GetNetwork().GetDefaultInterface().GetTxBytes(), uint64(4321)},
		{"pod interfaces (without lo)", len(pod.GetNetwork().GetInterfaces()), 1},
		{"pod processes (app's cgroup)", pod.GetProcessStats().GetProcessCount(), uint64(2)},
	}
	for _, c := range podChecks {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", c.what, c.got, c.want)
		}
	}

	// The disk-backed emptyDir appears once its first walk is done; the
	// memory-backed one is measured by statfs at once.
	var volumes []*typesv1.VolumeStats
	deadline := time.Now().Add(10 * time.Second)
	for len(volumes) < 2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
		_, pods, err = getSummary(t, h, &statsv1.GetSummaryRequest{Fresh: true})
		if err != nil {
			t.Fatal(err)
		}
		volumes = pods[0].GetVolumeStats()
	}
	if len(volumes) != 2 || volumes[0].GetName() != "scratch" || volumes[1].GetName() != "shm" || volumes[0].GetFs().GetInodesUsed() != 2 {
		t.Fatalf("volumes = %v, want scratch (its directory and file) then shm", volumes)
	}
	// Ephemeral storage: the writable layer, the container's log, the
	// scratch volume and etc-hosts; shm is in memory and does not count.
	eph := pods[0].GetEphemeralStorage()
	wantUsed := uint64(8192) + pods[0].GetContainers()[0].GetLogs().GetUsedBytes() + volumes[0].GetFs().GetUsedBytes() + 4096
	if eph.GetUsedBytes() != wantUsed || eph.GetInodesUsed() != 3+1+2+1 {
		t.Errorf("ephemeral storage = %v, want %d bytes in 7 inodes", eph, wantUsed)
	}
}

func TestSummaryOnlyCPUAndMemory(t *testing.T) {
	f := newFixture(t)
	h := serve(t, f, f.config())
	node, pods, err := getSummary(t, h, &statsv1.GetSummaryRequest{OnlyCpuAndMemory: true, Fresh: true})
	if err != nil {
		t.Fatal(err)
	}
	if node.GetCpu() == nil || node.GetMemory() == nil || node.Fs != nil || node.Runtime != nil || node.Rlimit != nil || node.Network != nil {
		t.Errorf("node = %v, want cpu and memory only", node)
	}
	if len(pods) != 1 || pods[0].GetCpu() == nil || pods[0].Network != nil || pods[0].EphemeralStorage != nil ||
		pods[0].ProcessStats != nil || pods[0].GetContainers()[0].Rootfs != nil || pods[0].GetContainers()[0].Logs != nil {
		t.Errorf("pods = %v, want cpu and memory only", pods)
	}
	if n := f.host.count("ImageFsInfo"); n != 0 {
		t.Errorf("asked the core for image filesystems %d times; cpu and memory need none", n)
	}
}

// The counters only /metrics/cadvisor exports (here a container's page
// cache) are read for a request that asks for them alone; such an answer
// serves a full request too, and a full answer does not serve it.
func TestCadvisorCounters(t *testing.T) {
	f := newFixture(t)
	h := serve(t, f, f.config())
	measured := func() int { return f.host.count("ListContainerStats") }
	cache := func(req *statsv1.GetSummaryRequest) *uint64 {
		t.Helper()
		_, pods, err := getSummary(t, h, req)
		if err != nil {
			t.Fatal(err)
		}
		if len(pods) != 1 || len(pods[0].GetContainers()) != 1 {
			t.Fatalf("pods = %v, want web with app", pods)
		}
		return pods[0].GetContainers()[0].GetMemory().CacheBytes
	}

	if got := cache(&statsv1.GetSummaryRequest{Fresh: true}); got != nil {
		t.Errorf("a full summary has the container's page cache (%d): it read the container's cgroup for nothing", *got)
	}
	if got := cache(&statsv1.GetSummaryRequest{CadvisorCounters: true}); got == nil || *got != 4096 {
		t.Errorf("the cadvisor summary's container page cache = %v, want 4096", got)
	}
	if got := measured(); got != 2 {
		t.Errorf("a cadvisor request after a full answer measured %d times in all, want 2", got)
	}
	if got := cache(&statsv1.GetSummaryRequest{}); got == nil || *got != 4096 {
		t.Errorf("a full request after a cadvisor answer got page cache %v, want that answer's 4096", got)
	}
	if got := measured(); got != 2 {
		t.Errorf("a full request within max_age of a cadvisor answer measured %d times in all, want 2", got)
	}
}

func TestSummaryCache(t *testing.T) {
	f := newFixture(t)
	h := serve(t, f, f.config())
	measured := func() int { return f.host.count("ListContainerStats") }

	if _, _, err := getSummary(t, h, &statsv1.GetSummaryRequest{}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := getSummary(t, h, &statsv1.GetSummaryRequest{}); err != nil {
		t.Fatal(err)
	}
	if got := measured(); got != 1 {
		t.Errorf("two requests within max_age measured %d times, want 1", got)
	}
	if _, _, err := getSummary(t, h, &statsv1.GetSummaryRequest{OnlyCpuAndMemory: true}); err != nil {
		t.Fatal(err)
	}
	if got := measured(); got != 2 {
		t.Errorf("a cpu-and-memory request after a full one measured %d times in all, want 2 (answers are kept per kind)", got)
	}
	if _, _, err := getSummary(t, h, &statsv1.GetSummaryRequest{Fresh: true}); err != nil {
		t.Fatal(err)
	}
	if got := measured(); got != 3 {
		t.Errorf("a fresh request measured %d times in all, want 3", got)
	}

	// max_age 0: every request measures.
	g := newFixture(t)
	block := g.config()
	block["max_age"] = "0s"
	h = serve(t, g, block)
	for range 2 {
		if _, _, err := getSummary(t, h, &statsv1.GetSummaryRequest{}); err != nil {
			t.Fatal(err)
		}
	}
	if got := g.host.count("ListContainerStats"); got != 2 {
		t.Errorf("with max_age 0s two requests measured %d times, want 2", got)
	}
}

// A measurement that outlives the request's deadline goes on: the next
// request gets its summary. Meanwhile a request that does not ask for fresh
// stats gets the last summary, however old; a fresh one gets the error.
func TestSlowMeasurement(t *testing.T) {
	f := newFixture(t)
	block := f.config()
	block["max_age"] = "0s" // every request measures
	h := serve(t, f, block)
	within := func(d time.Duration, req *statsv1.GetSummaryRequest) error {
		ctx, cancel := context.WithTimeout(t.Context(), d)
		defer cancel()
		stream, err := h.Stats().GetSummary(ctx, req)
		if err != nil {
			return err
		}
		for {
			if _, err := stream.Recv(); errors.Is(err, io.EOF) {
				return nil
			} else if err != nil {
				return err
			}
		}
	}

	release := f.host.slowDown()
	if err := within(100*time.Millisecond, &statsv1.GetSummaryRequest{}); status.Code(err) != codes.DeadlineExceeded {
		t.Fatalf("first request, no summary yet: %v, want DEADLINE_EXCEEDED", err)
	}
	release()
	// The cut-short request's measurement finishes; later ones measure
	// again (max_age 0) and answer.
	if _, _, err := getSummary(t, h, &statsv1.GetSummaryRequest{}); err != nil {
		t.Fatalf("after the runtime answered: %v", err)
	}

	defer f.host.slowDown()()
	for _, what := range []string{"a slow measurement", "a request waiting for another's slow measurement"} {
		if err := within(100*time.Millisecond, &statsv1.GetSummaryRequest{}); err != nil {
			t.Errorf("%s with a summary already made: %v, want the last summary", what, err)
		}
	}
	if err := within(100*time.Millisecond, &statsv1.GetSummaryRequest{Fresh: true}); status.Code(err) != codes.DeadlineExceeded {
		t.Errorf("a fresh request during a slow measurement: %v, want DEADLINE_EXCEEDED", err)
	}
}

func TestSummaryErrors(t *testing.T) {
	f := newFixture(t)
	h := serve(t, f, f.config())

	f.host.failing("ListContainerStats", errDown)
	_, _, err := getSummary(t, h, &statsv1.GetSummaryRequest{Fresh: true})
	if status.Code(err) != codes.Unavailable || !strings.Contains(err.Error(), "list container stats from the core's host service") {
		t.Errorf("runtime down: %v, want UNAVAILABLE naming the call", err)
	}

	f.host.failing("ImageFsInfo", nil)
	f.host.imageFs.ImageFilesystems = nil
	_, _, err = getSummary(t, h, &statsv1.GetSummaryRequest{Fresh: true})
	if err == nil || !strings.Contains(err.Error(), "imageFs information is unavailable") {
		t.Errorf("no image filesystem: %v, want the kubelet's error", err)
	}
	if _, _, err := getSummary(t, h, &statsv1.GetSummaryRequest{Fresh: true, OnlyCpuAndMemory: true}); err != nil {
		t.Errorf("cpu and memory need no image filesystem: %v", err)
	}

	f.host.node.RootDir = ""
	f.host.imageFs.ImageFilesystems = []*hostv1.FilesystemUsage{{Mountpoint: f.root}}
	_, _, err = getSummary(t, h, &statsv1.GetSummaryRequest{Fresh: true})
	if err == nil || !strings.Contains(err.Error(), "names no root_dir") {
		t.Errorf("no root dir: %v", err)
	}
}

func TestConfigure(t *testing.T) {
	f := newFixture(t)

	h := sdktest.InProcess(t, info, &Plugin{})
	err := h.Configure(f.config())
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "needs the core's host service") {
		t.Errorf("Configure without a host service: %v", err)
	}

	h = sdktest.InProcess(t, info, &Plugin{}, sdktest.WithHostService(f.host))
	block := f.config()
	block["cgroupfs"] = f.root
	if err := h.Configure(block); err == nil || !strings.Contains(err.Error(), "neither a cgroup v2 mount") {
		t.Errorf("Configure with no cgroups at cgroupfs: %v", err)
	}

	errs, err := h.ValidateConfig(map[string]any{"procfs": "proc", "pods_cgroup": "kubepods", "max_age": "-1s", "disk_usage_period": "10ms"})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"procfs":            `expected an absolute path, got "proc"`,
		"pods_cgroup":       `expected a cgroup path from the hierarchy's root such as "/kubepods", got "kubepods"`,
		"max_age":           "expected a duration of 0s or more, got -1s",
		"disk_usage_period": "expected a duration of 1s or more, got 10ms",
	}
	if len(errs) != len(want) {
		t.Errorf("ValidateConfig = %v, want %d errors", errs, len(want))
	}
	for _, e := range errs {
		if want[e.Path] != e.Message {
			t.Errorf("%s: %q, want %q", e.Path, e.Message, want[e.Path])
		}
	}
}

// TestSummaryOnThisHost measures the real node (its /proc and cgroup tree)
// with the fixture's pods, whose cgroups do not exist here: their cpu and
// memory are then their containers' sum.
func TestSummaryOnThisHost(t *testing.T) {
	f := newFixture(t)
	h := serve(t, f, map[string]any{})
	node, pods, err := getSummary(t, h, &statsv1.GetSummaryRequest{Fresh: true})
	if err != nil {
		prereq.Missing(t, "this host cannot be measured: %v", err)
	}
	if node.GetCpu().GetUsageCoreNanoSeconds() == 0 || node.GetMemory().GetWorkingSetBytes() == 0 ||
		node.GetMemory().GetAvailableBytes() == 0 || node.GetFs().GetCapacityBytes() == 0 || node.GetRlimit().GetMaxPid() == 0 {
		t.Errorf("node = %v", node)
	}
	if len(pods) != 1 || pods[0].GetMemory().GetWorkingSetBytes() != 2000000 || pods[0].GetCpu().GetUsageCoreNanoSeconds() != 1500000000 {
		t.Errorf("pods = %v, want web with its container's cpu and memory", pods)
	}
}

// The "pods" system container is read from pods_cgroup when configured,
// else from the cgroup the core names in its node view (the cgroup
// plugin's kubepods under cgroup_root), else from /kubepods.
func TestPodsCgroupChoice(t *testing.T) {
	for _, tc := range []struct {
		name       string
		configured string
		nodeView   string
		want       uint64
	}{
		{"default", "", "", 3000000},
		{"from the node view", "", "/node-root/kubepods", 700000},
		{"configured wins", "/kubepods", "/node-root/kubepods", 3000000},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t)
			write(t, filepath.Join(f.cgroups, "node-root/kubepods/memory.current"), "800000\n")
			write(t, filepath.Join(f.cgroups, "node-root/kubepods/memory.stat"), "inactive_file 100000\nanon 700000\n")
			write(t, filepath.Join(f.cgroups, "node-root/kubepods/cpu.stat"), "usage_usec 1000000\n")
			write(t, filepath.Join(f.cgroups, "node-root/kubepods/memory.max"), "max\n")
			f.host.node.PodsCgroup = tc.nodeView
			block := f.config()
			if tc.configured != "" {
				block["pods_cgroup"] = tc.configured
			}
			node, _, err := getSummary(t, serve(t, f, block), &statsv1.GetSummaryRequest{Fresh: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(node.GetSystemContainers()) != 1 {
				t.Fatalf("system containers %v, want pods", node.GetSystemContainers())
			}
			if got := node.GetSystemContainers()[0].GetMemory().GetWorkingSetBytes(); got != tc.want {
				t.Errorf("pods working set %d, want %d", got, tc.want)
			}
		})
	}
}
