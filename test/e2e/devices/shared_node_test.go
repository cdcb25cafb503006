//go:build e2e

package devicese2e

import (
	"context"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/microlet/microlet/internal/prereq"
)

// otherFuse is the resource a second, upstream-API plugin offers /dev/fuse as.
const otherFuse = "example.com/fuse"

// TestDeviceNodeWithTwoOwnersIsReported: /dev/fuse offered as
// microlet.dev/fuse by hostdev and as example.com/fuse by an upstream-API
// plugin registered with the bridge. Both pods run (docs/devices.md says
// why it is not refused), and the core warns, naming the node and both
// resources.
func TestDeviceNodeWithTwoOwnersIsReported(t *testing.T) {
	if info, err := os.Stat("/dev/fuse"); err != nil || info.Mode()&fs.ModeCharDevice == 0 {
		prereq.Missing(t, "this host has no /dev/fuse character device (%v); load the fuse module: modprobe fuse", err)
	}
	lockDevicePluginDir(t)
	n := startNode(t, hostdevFuse+"plugin \"devices\" \"kubernetes\" {}\n")
	waitForKubeletSocket(t)
	startFusePlugin(t)

	n.addPod("first", devicePod("first", fuse, 1))
	n.running("first")
	n.addPod("second", devicePod("second", otherFuse, 1))
	n.running("second")
	n.eventually("the core reports the shared device node", func() (bool, string) {
		for _, line := range strings.Split(n.log.String(), "\n") {
			if strings.Contains(line, "handed out by two resources") && strings.Contains(line, "/dev/fuse") &&
				strings.Contains(line, otherFuse) && strings.Contains(line, fuse) {
				return true, line
			}
		}
		return false, "no warning in the core's log"
	})
}

// fusePlugin is an upstream-API device plugin with one device, /dev/fuse.
type fusePlugin struct {
	pluginapi.UnimplementedDevicePluginServer
}

func (fusePlugin) GetDevicePluginOptions(context.Context, *pluginapi.Empty) (*pluginapi.DevicePluginOptions, error) {
	return &pluginapi.DevicePluginOptions{}, nil
}

func (fusePlugin) ListAndWatch(_ *pluginapi.Empty, stream pluginapi.DevicePlugin_ListAndWatchServer) error {
	if err := stream.Send(&pluginapi.ListAndWatchResponse{Devices: []*pluginapi.Device{{ID: "fuse", Health: pluginapi.Healthy}}}); err != nil {
		return err
	}
	<-stream.Context().Done()
	return nil
}

func (fusePlugin) Allocate(_ context.Context, req *pluginapi.AllocateRequest) (*pluginapi.AllocateResponse, error) {
	resp := &pluginapi.AllocateResponse{}
	for range req.ContainerRequests {
		resp.ContainerResponses = append(resp.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Devices: []*pluginapi.DeviceSpec{{ContainerPath: "/dev/fuse", HostPath: "/dev/fuse", Permissions: "rwm"}},
		})
	}
	return resp, nil
}

// startFusePlugin serves fusePlugin in the device plugin directory and
// registers it with the bridge.
func startFusePlugin(t *testing.T) {
	t.Helper()
	socket := filepath.Join(pluginapi.DevicePluginPath, "e2e-fuse.sock")
	os.Remove(socket)
	ln, err := net.Listen("unix", socket)
	if err != nil {
		t.Fatal(err)
	}
	srv := grpc.NewServer()
	pluginapi.RegisterDevicePluginServer(srv, fusePlugin{})
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Stop(); os.Remove(socket) })

	conn, err := grpc.NewClient("unix://"+pluginapi.KubeletSocket, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waitLimit)
	defer cancel()
	if _, err := pluginapi.NewRegistrationClient(conn).Register(ctx, &pluginapi.RegisterRequest{
		Version: pluginapi.Version, Endpoint: filepath.Base(socket), ResourceName: otherFuse,
	}); err != nil {
		t.Fatalf("register %s with the bridge: %v", otherFuse, err)
	}
}
