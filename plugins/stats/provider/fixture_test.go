package provider

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/timestamppb"

	hostv1 "github.com/microlet/microlet/proto/microlet/host/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// fakeHost is the core's host service with a fixed node, pods and runtime
// stats. fail makes one call answer an error.
type fakeHost struct {
	hostv1.UnimplementedHostServiceServer
	node       *typesv1.Node
	pods       []*typesv1.Pod
	containers []*hostv1.RuntimeContainerStats
	imageFs    *hostv1.ImageFsInfoResponse

	mu    sync.Mutex
	fail  map[string]error
	calls map[string]int
	// slow, when set, holds ListContainerStats until it is closed: a
	// runtime slow to list container stats.
	slow chan struct{}
}

// slowDown makes ListContainerStats wait until the returned function runs.
func (f *fakeHost) slowDown() (release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.slow = make(chan struct{})
	return sync.OnceFunc(func() { close(f.slow) })
}

func (f *fakeHost) called(name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.calls == nil {
		f.calls = map[string]int{}
	}
	f.calls[name]++
	return f.fail[name]
}

func (f *fakeHost) count(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.calls[name]
}

func (f *fakeHost) failing(name string, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.fail = map[string]error{name: err}
}

func (f *fakeHost) GetNode(context.Context, *hostv1.GetNodeRequest) (*hostv1.GetNodeResponse, error) {
	return &hostv1.GetNodeResponse{Node: f.node}, f.called("GetNode")
}

func (f *fakeHost) ListPods(_ *hostv1.ListPodsRequest, s grpc.ServerStreamingServer[hostv1.ListPodsResponse]) error {
	if err := f.called("ListPods"); err != nil {
		return err
	}
	for _, p := range f.pods {
		if err := s.Send(&hostv1.ListPodsResponse{Pod: p}); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeHost) ListContainerStats(_ *hostv1.ListContainerStatsRequest, s grpc.ServerStreamingServer[hostv1.ListContainerStatsResponse]) error {
	if err := f.called("ListContainerStats"); err != nil {
		return err
	}
	f.mu.Lock()
	slow := f.slow
	f.mu.Unlock()
	if slow != nil {
		<-slow
	}
	for _, c := range f.containers {
		if err := s.Send(&hostv1.ListContainerStatsResponse{Stats: c}); err != nil {
			return err
		}
	}
	return nil
}

func (f *fakeHost) ImageFsInfo(context.Context, *hostv1.ImageFsInfoRequest) (*hostv1.ImageFsInfoResponse, error) {
	return f.imageFs, f.called("ImageFsInfo")
}

var errDown = status.Error(codes.Unavailable, "runtime down")

// fixture is a node on disk: a fake procfs, a fake cgroup v2 tree, the
// agent's root directory, pod logs and volumes, and the host service that
// describes them.
type fixture struct {
	proc, cgroups, root, logs string
	host                      *fakeHost
}

func u(v uint64) *uint64 { return &v }

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

const podCgroup = "/kubepods/burstable/podu1"

func newFixture(t *testing.T) *fixture {
	dir := t.TempDir()
	f := &fixture{
		proc:    filepath.Join(dir, "proc"),
		cgroups: filepath.Join(dir, "cgroup"),
		root:    filepath.Join(dir, "root"),
		logs:    filepath.Join(dir, "logs"),
	}
	for path, content := range map[string]string{
		"meminfo":            "MemTotal:       1048576 kB\nMemFree:         524288 kB\nInactive(file):   1024 kB\nAnonPages:  2048 kB\nSwapTotal: 0 kB\nSwapFree: 0 kB\n",
		"stat":               "cpu  100 0 100 1000 0 0 0 0 0 0\nbtime 1700000000\n",
		"loadavg":            "0.00 0.00 0.00 1/77 100\n",
		"sys/kernel/pid_max": "32768\n",
		"net/dev":            "Inter-| Receive | Transmit\n face |bytes packets errs drop fifo frame compressed multicast|bytes packets errs drop fifo colls carrier compressed\n  eth0: 10 1 0 0 0 0 0 0 20 2 0 0 0 0 0 0\n",
		"pressure/memory":    "some avg10=0.00 avg60=0.00 avg300=0.00 total=5\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=1\n",
		// The sandbox's pause process (pid 9, in the sandbox's cgroup) and
		// its network namespace.
		"9/stat":    "9 (pause) S 1 9 9 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 100 1000 10 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n",
		"9/net/dev": "Inter-| Receive | Transmit\n face |bytes packets errs drop fifo frame compressed multicast|bytes packets errs drop fifo colls carrier compressed\n    lo: 5 1 0 0 0 0 0 0 5 1 0 0 0 0 0 0\n  eth0: 1234 9 0 0 0 0 0 0 4321 8 0 0 0 0 0 0\n",
	} {
		write(t, filepath.Join(f.proc, path), content)
	}
	for path, content := range map[string]string{
		"cgroup.controllers":                  "cpu memory\n",
		"cpu.stat":                            "usage_usec 50000000\n",
		"kubepods/cpu.stat":                   "usage_usec 3000000\n",
		"kubepods/memory.current":             "4000000\n",
		"kubepods/memory.max":                 "max\n",
		"kubepods/memory.stat":                "inactive_file 1000000\nanon 2000000\n",
		podCgroup + "/cpu.stat":               "usage_usec 2000000\n",
		podCgroup + "/memory.current":         "3000000\n",
		podCgroup + "/memory.max":             "10000000\n",
		podCgroup + "/memory.stat":            "inactive_file 500000\nanon 1500000\npgfault 10\npgmajfault 1\n",
		podCgroup + "/c-app/cgroup.procs":     "10\n11\n",
		podCgroup + "/c-app/memory.stat":      "file 4096\n",
		podCgroup + "/sandbox-1/cgroup.procs": "9\n",
	} {
		write(t, filepath.Join(f.cgroups, path), content)
	}
	podLogs := filepath.Join(f.logs, "shop_web_u1")
	write(t, filepath.Join(podLogs, "app", "0.log"), "hello\n")
	write(t, filepath.Join(f.root, "pods", "u1", "etc-hosts"), "127.0.0.1 localhost\n")
	scratch := filepath.Join(f.root, "pods", "u1", "volumes", "kubernetes.io~empty-dir", "scratch")
	write(t, filepath.Join(scratch, "data"), "some data\n")
	memoryVolume := filepath.Join(f.root, "pods", "u1", "volumes", "kubernetes.io~empty-dir", "shm")
	if err := os.MkdirAll(memoryVolume, 0o755); err != nil {
		t.Fatal(err)
	}

	started := timestamppb.New(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	now := timestamppb.Now()
	f.host = &fakeHost{
		node: &typesv1.Node{Name: "node-a", RootDir: f.root, PodLogsDir: f.logs, CgroupDriver: "cgroupfs", CgroupVersion: 2},
		pods: []*typesv1.Pod{
			{
				Uid: "u1", Namespace: "shop", Name: "web", StartTime: started, CgroupParent: podCgroup,
				LogDirectory: podLogs, SandboxId: "sandbox-1",
				InitContainers: []*typesv1.Container{{Name: "setup", ContainerId: "c-setup", State: "exited"}},
				Containers: []*typesv1.Container{
					{Name: "app", ContainerId: "c-app", State: "running", StartedAt: started},
					{Name: "next", State: "created"},
				},
				Volumes: []*typesv1.Volume{
					{Name: "scratch", Type: "emptyDir", HostPath: scratch},
					{Name: "shm", Type: "emptyDir", Medium: "Memory", HostPath: memoryVolume},
					{Name: "data", Type: "hostPath", HostPath: "/srv"},
				},
			},
			// Nothing runs: not in the summary.
			{Uid: "u2", Namespace: "shop", Name: "done", Containers: []*typesv1.Container{{Name: "job", ContainerId: "c-job", State: "exited"}}},
		},
		containers: []*hostv1.RuntimeContainerStats{
			{ContainerId: "c-app", PodUid: "u1", ContainerName: "app",
				Cpu:           &typesv1.CPUStats{Time: now, UsageCoreNanoSeconds: u(1500000000), UsageNanoCores: u(1000)},
				Memory:        &typesv1.MemoryStats{Time: now, WorkingSetBytes: u(2000000), UsageBytes: u(2500000)},
				WritableLayer: &typesv1.FsStats{Time: now, UsedBytes: u(8192), InodesUsed: u(3)}},
			{ContainerId: "c-setup", PodUid: "u1", ContainerName: "setup"},
			{ContainerId: "c-job", PodUid: "u2", ContainerName: "job"},
		},
		imageFs: &hostv1.ImageFsInfoResponse{ImageFilesystems: []*hostv1.FilesystemUsage{{Timestamp: now, Mountpoint: dir, UsedBytes: u(1 << 20), InodesUsed: u(50)}}},
	}
	return f
}

// config is the plugin's block for the fixture.
func (f *fixture) config() map[string]any {
	return map[string]any{"procfs": f.proc, "cgroupfs": f.cgroups}
}
