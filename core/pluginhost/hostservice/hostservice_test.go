package hostservice

import (
	"context"
	"net"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/types/known/durationpb"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	hostv1 "github.com/microlet/microlet/proto/microlet/host/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk"
)

type fakeRuntime struct{ execTimeout time.Duration }

func (f *fakeRuntime) ExecSync(_ context.Context, id string, cmd []string, timeout time.Duration) (*runtimeapi.ExecSyncResponse, error) {
	f.execTimeout = timeout
	return &runtimeapi.ExecSyncResponse{Stdout: []byte(id + ":" + cmd[0]), ExitCode: 7}, nil
}

func (f *fakeRuntime) ListContainerStats(context.Context, *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	return []*runtimeapi.ContainerStats{{
		Attributes: &runtimeapi.ContainerAttributes{Id: "c1", Labels: map[string]string{
			"io.kubernetes.pod.uid": "u1", "io.kubernetes.pod.name": "web", "io.kubernetes.pod.namespace": "default", "io.kubernetes.container.name": "app"}},
		Cpu:           &runtimeapi.CpuUsage{Timestamp: 1e9, UsageCoreNanoSeconds: &runtimeapi.UInt64Value{Value: 42}},
		Memory:        &runtimeapi.MemoryUsage{Timestamp: 1e9, WorkingSetBytes: &runtimeapi.UInt64Value{Value: 1 << 20}},
		WritableLayer: &runtimeapi.FilesystemUsage{UsedBytes: &runtimeapi.UInt64Value{Value: 4096}},
	}}, nil
}

func (f *fakeRuntime) ListPodSandboxStats(context.Context, *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	return []*runtimeapi.PodSandboxStats{{
		Attributes: &runtimeapi.PodSandboxAttributes{Id: "sb1", Metadata: &runtimeapi.PodSandboxMetadata{Uid: "u1", Name: "web", Namespace: "default"}},
		Linux: &runtimeapi.LinuxPodSandboxStats{
			Network: &runtimeapi.NetworkUsage{Interfaces: []*runtimeapi.NetworkInterfaceUsage{{Name: "eth0", RxBytes: &runtimeapi.UInt64Value{Value: 9}}}},
			Process: &runtimeapi.ProcessUsage{ProcessCount: &runtimeapi.UInt64Value{Value: 3}},
		},
	}}, nil
}

func (f *fakeRuntime) ImageFsInfo(context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{{
		FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: "/var/lib/containerd"}, UsedBytes: &runtimeapi.UInt64Value{Value: 5}}}}, nil
}

type fakeState struct{}

func (fakeState) PodViews() []*typesv1.Pod {
	return []*typesv1.Pod{{Uid: "u1", Name: "web"}, {Uid: "u2", Name: "db"}}
}
func (fakeState) NodeView() *typesv1.Node { return &typesv1.Node{Name: "node-a"} }

func serve(t *testing.T, rt Runtime) *sdk.Host {
	t.Helper()
	ln, err := net.Listen("unix", t.TempDir()+"/host.sock")
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	hostv1.RegisterHostServiceServer(srv, New(rt, fakeState{}))
	go srv.Serve(ln)
	t.Cleanup(srv.Stop)
	conn, err := grpc.NewClient("unix://"+ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return sdk.NewHost(hostv1.NewHostServiceClient(conn), "node-a")
}

func TestHostService(t *testing.T) {
	rt := &fakeRuntime{}
	host := serve(t, rt)
	ctx := context.Background()

	exec, err := host.ExecSync(ctx, "c1", []string{"true"}, 3*time.Second)
	if err != nil || string(exec.GetStdout()) != "c1:true" || exec.GetExitCode() != 7 || rt.execTimeout != 3*time.Second {
		t.Fatalf("ExecSync = %v, %v (timeout %v)", exec, err, rt.execTimeout)
	}
	_, err = host.Client().ExecSync(ctx, &hostv1.ExecSyncRequest{ContainerId: "c1", Timeout: durationpb.New(time.Second)})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("ExecSync without a command: %v", err)
	}

	pods, err := host.Pods(ctx)
	if err != nil || len(pods) != 2 || pods[1].GetName() != "db" {
		t.Errorf("Pods = %v, %v", pods, err)
	}
	node, err := host.Node(ctx)
	if err != nil || node.GetName() != "node-a" {
		t.Errorf("Node = %v, %v", node, err)
	}

	cs, err := host.ContainerStats(ctx)
	if err != nil || len(cs) != 1 {
		t.Fatalf("ContainerStats = %v, %v", cs, err)
	}
	c := cs[0]
	if c.GetPodUid() != "u1" || c.GetContainerName() != "app" || c.GetCpu().GetUsageCoreNanoSeconds() != 42 ||
		c.GetMemory().GetWorkingSetBytes() != 1<<20 || c.GetWritableLayer().GetUsedBytes() != 4096 || c.GetCpu().UsageNanoCores != nil {
		t.Errorf("container stats: %v", c)
	}
	if !c.GetCpu().GetTime().AsTime().Equal(time.Unix(1, 0)) {
		t.Errorf("timestamp: %v", c.GetCpu().GetTime().AsTime())
	}

	ss, err := host.PodSandboxStats(ctx)
	if err != nil || len(ss) != 1 || ss[0].GetPodUid() != "u1" || ss[0].GetProcess().GetProcessCount() != 3 ||
		ss[0].GetNetwork().GetInterfaces()[0].GetRxBytes() != 9 {
		t.Errorf("sandbox stats: %v, %v", ss, err)
	}

	fs, err := host.ImageFsInfo(ctx)
	if err != nil || fs.GetImageFilesystems()[0].GetMountpoint() != "/var/lib/containerd" || fs.GetImageFilesystems()[0].GetUsedBytes() != 5 {
		t.Errorf("image fs: %v, %v", fs, err)
	}
}
