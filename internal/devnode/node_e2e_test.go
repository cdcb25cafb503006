//go:build e2e

package devnode

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// testTimeout bounds each CRI call sequence of a test.
const testTimeout = 2 * time.Minute

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	t.Cleanup(cancel)
	return ctx
}

// pod is a running sandbox on a node.
type pod struct {
	id     string
	config *runtimeapi.PodSandboxConfig
	ip     string
}

// runPod runs a sandbox on the node's CNI network.
func runPod(ctx context.Context, t *testing.T, n *Node, name string) pod {
	t.Helper()
	config := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Uid: name + "-uid", Namespace: "default"},
		Hostname:     name,
		LogDirectory: filepath.Join(n.Dir, "pod-logs", name),
		Linux:        &runtimeapi.LinuxPodSandboxConfig{},
	}
	resp, err := n.RuntimeClient().RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: config})
	if err != nil {
		t.Fatalf("RunPodSandbox %s: %v", name, err)
	}
	status, err := n.RuntimeClient().PodSandboxStatus(ctx, &runtimeapi.PodSandboxStatusRequest{PodSandboxId: resp.GetPodSandboxId()})
	if err != nil {
		t.Fatalf("PodSandboxStatus %s: %v", name, err)
	}
	return pod{id: resp.GetPodSandboxId(), config: config, ip: status.GetStatus().GetNetwork().GetIp()}
}

// startContainer creates and starts a busybox container in the pod.
func startContainer(ctx context.Context, t *testing.T, n *Node, p pod, name string, command ...string) string {
	t.Helper()
	resp, err := n.RuntimeClient().CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId: p.id,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: name},
			Image:    &runtimeapi.ImageSpec{Image: n.TestImage},
			Command:  command,
			LogPath:  name + ".log",
			Linux:    &runtimeapi.LinuxContainerConfig{},
		},
		SandboxConfig: p.config,
	})
	if err != nil {
		t.Fatalf("CreateContainer %s: %v", name, err)
	}
	if _, err := n.RuntimeClient().StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: resp.GetContainerId()}); err != nil {
		t.Fatalf("StartContainer %s: %v", name, err)
	}
	return resp.GetContainerId()
}

func containerState(ctx context.Context, t *testing.T, n *Node, id string) runtimeapi.ContainerState {
	t.Helper()
	resp, err := n.RuntimeClient().ContainerStatus(ctx, &runtimeapi.ContainerStatusRequest{ContainerId: id})
	if err != nil {
		t.Fatalf("ContainerStatus %s: %v", id, err)
	}
	return resp.GetStatus().GetState()
}

func execSync(ctx context.Context, t *testing.T, n *Node, id string, cmd ...string) string {
	t.Helper()
	resp, err := n.RuntimeClient().ExecSync(ctx, &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: 10})
	if err != nil {
		t.Fatalf("ExecSync %q: %v", cmd, err)
	}
	if resp.GetExitCode() != 0 {
		t.Fatalf("ExecSync %q exited %d: %s", cmd, resp.GetExitCode(), resp.GetStderr())
	}
	return string(resp.GetStdout())
}

// httpGet fetches url until it answers or ctx ends: a server in a fresh
// container takes a moment to listen.
func httpGet(ctx context.Context, url string) (string, error) {
	client := &http.Client{Timeout: 2 * time.Second}
	for {
		resp, err := client.Get(url)
		if err == nil {
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && resp.StatusCode == http.StatusOK {
				return string(body), nil
			}
			err = fmt.Errorf("%s: %s %v", url, resp.Status, rerr)
		}
		select {
		case <-ctx.Done():
			return "", fmt.Errorf("%w (%v)", err, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

func TestNodeRunsPods(t *testing.T) {
	t.Parallel()
	n := StartT(t)
	ctx := testContext(t)
	rt := n.RuntimeClient()

	version, err := rt.Version(ctx, &runtimeapi.VersionRequest{})
	if err != nil {
		t.Fatalf("Version: %v", err)
	}
	if version.GetRuntimeName() != "containerd" || version.GetRuntimeApiVersion() != "v1" {
		t.Errorf("Version = %s, CRI %s; want containerd, v1", version.GetRuntimeName(), version.GetRuntimeApiVersion())
	}

	p := runPod(ctx, t, n, "web")
	_, subnet, _ := net.ParseCIDR(n.Subnet)
	if ip := net.ParseIP(p.ip); ip == nil || !subnet.Contains(ip) {
		t.Fatalf("pod IP %q, want one in %s", p.ip, n.Subnet)
	}

	sleeper := startContainer(ctx, t, n, p, "sleeper", "sleep", "3600")
	if got := containerState(ctx, t, n, sleeper); got != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("sleeper is %v, want running", got)
	}
	if got := execSync(ctx, t, n, sleeper, "echo", "hi"); got != "hi\n" {
		t.Errorf("exec echo hi printed %q", got)
	}

	stats, err := rt.ContainerStats(ctx, &runtimeapi.ContainerStatsRequest{ContainerId: sleeper})
	if err != nil {
		t.Fatalf("ContainerStats: %v", err)
	}
	if s := stats.GetStats(); s.GetAttributes().GetId() != sleeper || s.GetCpu() == nil || s.GetMemory().GetWorkingSetBytes() == nil {
		t.Errorf("ContainerStats = %v, want the sleeper's cpu and memory", s)
	}

	// A server in the pod, reached over the pod IP from the host through the
	// node's bridge, and over loopback from the pod's other container
	// (containerd brings lo up).
	server := startContainer(ctx, t, n, p, "server", "sh", "-c",
		"mkdir -p /tmp/www && echo hello from the pod > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www")
	body, err := httpGet(ctx, "http://"+net.JoinHostPort(p.ip, "8080")+"/index.html")
	if err != nil || body != "hello from the pod\n" {
		t.Fatalf("GET from the host: %q, %v", body, err)
	}
	if got := execSync(ctx, t, n, sleeper, "wget", "-q", "-O", "-", "http://127.0.0.1:8080/index.html"); got != "hello from the pod\n" {
		t.Errorf("GET over the pod's loopback: %q", got)
	}

	// The runtime restarts under the agent: containers keep running and the
	// CRI answers again on the same socket.
	oldPID := n.PID
	if err := n.Restart(ctx); err != nil {
		t.Fatalf("Restart: %v", err)
	}
	if n.PID == oldPID {
		t.Errorf("containerd PID is still %d after Restart", n.PID)
	}
	if got := containerState(ctx, t, n, sleeper); got != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("after Restart the sleeper is %v, want running", got)
	}
	if got := execSync(ctx, t, n, sleeper, "echo", "still here"); got != "still here\n" {
		t.Errorf("exec after Restart printed %q", got)
	}

	for _, id := range []string{server, sleeper} {
		if _, err := rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 1}); err != nil {
			t.Fatalf("StopContainer: %v", err)
		}
		if got := containerState(ctx, t, n, id); got != runtimeapi.ContainerState_CONTAINER_EXITED {
			t.Errorf("stopped container is %v, want exited", got)
		}
		if _, err := rt.RemoveContainer(ctx, &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
			t.Fatalf("RemoveContainer: %v", err)
		}
	}
	if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: p.id}); err != nil {
		t.Fatalf("StopPodSandbox: %v", err)
	}
	if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.id}); err != nil {
		t.Fatalf("RemovePodSandbox: %v", err)
	}
	list, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil || len(list.GetItems()) != 0 {
		t.Errorf("sandboxes after removal: %v, %v; want none", list.GetItems(), err)
	}
}

func TestTwoNodesShareNothing(t *testing.T) {
	t.Parallel()
	nodes := []*Node{StartT(t), StartT(t)}
	a, b := nodes[0], nodes[1]
	for _, pair := range [][2]string{
		{a.Socket, b.Socket}, {a.Dir, b.Dir}, {a.RunDir, b.RunDir}, {a.Subnet, b.Subnet},
		{a.Bridge, b.Bridge}, {a.Network, b.Network}, {a.CNIConfDir, b.CNIConfDir},
	} {
		if pair[0] == pair[1] {
			t.Errorf("both nodes use %s", pair[0])
		}
	}
	ctx := testContext(t)
	for _, n := range nodes {
		checkPrivateConfig(ctx, t, n)
	}
	for i, n := range nodes {
		p := runPod(ctx, t, n, fmt.Sprintf("pod-%d", i))
		_, subnet, _ := net.ParseCIDR(n.Subnet)
		if !subnet.Contains(net.ParseIP(p.ip)) {
			t.Errorf("node %d: pod IP %s outside its subnet %s", i, p.ip, n.Subnet)
		}
		startContainer(ctx, t, n, p, "sleeper", "sleep", "3600")
	}
	// Each runtime sees its own pod only.
	for i, n := range nodes {
		list, err := n.RuntimeClient().ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.GetItems()) != 1 || list.GetItems()[0].GetMetadata().GetName() != fmt.Sprintf("pod-%d", i) {
			t.Errorf("node %d lists %v, want only its own pod-%d", i, list.GetItems(), i)
		}
	}
}

// checkPrivateConfig asserts, from the configuration the CRI plugin reports
// it runs with, that every path it uses is the node's own.
func checkPrivateConfig(ctx context.Context, t *testing.T, n *Node) {
	t.Helper()
	resp, err := n.RuntimeClient().Status(ctx, &runtimeapi.StatusRequest{Verbose: true})
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	var config struct {
		ContainerdRootDir   string `json:"containerdRootDir"`
		ContainerdEndpoint  string `json:"containerdEndpoint"`
		RootDir             string `json:"rootDir"`
		StateDir            string `json:"stateDir"`
		SandboxImage        string `json:"sandboxImage"`
		RestrictOOMScoreAdj bool   `json:"restrictOOMScoreAdj"`
		NetNSUnderStateDir  bool   `json:"netnsMountsUnderStateDir"`
		CNI                 struct {
			BinDir  string `json:"binDir"`
			ConfDir string `json:"confDir"`
		} `json:"cni"`
		Containerd struct {
			Runtimes map[string]struct {
				Options map[string]any `json:"options"`
			} `json:"runtimes"`
		} `json:"containerd"`
	}
	if err := json.Unmarshal([]byte(resp.GetInfo()["config"]), &config); err != nil {
		t.Fatalf("the CRI's config %q: %v", resp.GetInfo()["config"], err)
	}
	under := func(what, path, dir string) {
		if !strings.HasPrefix(path, dir+"/") {
			t.Errorf("%s %q is not under %s", what, path, dir)
		}
	}
	under("root", config.ContainerdRootDir, n.Dir)
	under("CRI root", config.RootDir, n.Dir)
	under("state", config.StateDir, n.RunDir)
	under("runc root", fmt.Sprint(config.Containerd.Runtimes["runc"].Options["Root"]), n.RunDir)
	if config.ContainerdEndpoint != n.Socket || config.CNI.ConfDir != n.CNIConfDir || config.CNI.BinDir != n.CNIBinDir {
		t.Errorf("endpoint %s, CNI conf %s, bin %s; want %s, %s, %s",
			config.ContainerdEndpoint, config.CNI.ConfDir, config.CNI.BinDir, n.Socket, n.CNIConfDir, n.CNIBinDir)
	}
	if config.SandboxImage != n.PauseImage || !config.RestrictOOMScoreAdj || !config.NetNSUnderStateDir {
		t.Errorf("sandbox image %s, restrictOOMScoreAdj %v, netnsMountsUnderStateDir %v; want %s, true, true",
			config.SandboxImage, config.RestrictOOMScoreAdj, config.NetNSUnderStateDir, n.PauseImage)
	}
}

func TestImportAndRemoveImages(t *testing.T) {
	t.Parallel()
	n := StartT(t)
	ctx := testContext(t)
	status := func(ref string) *runtimeapi.Image {
		t.Helper()
		resp, err := n.ImageClient().ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		if err != nil {
			t.Fatalf("ImageStatus %s: %v", ref, err)
		}
		return resp.GetImage()
	}

	const size = 8 << 20
	if err := n.ImportImage(ctx, FillerImage("localhost/filler:1", size)); err != nil {
		t.Fatal(err)
	}
	// The image is the filler file plus a few KiB of tar headers and JSON.
	if got := status("localhost/filler:1").GetSize(); got < size || got > size+16<<10 {
		t.Errorf("filler image size %d, want %d plus at most 16 KiB", got, size)
	}

	// A new image under the same name replaces the old one.
	if err := n.ImportImage(ctx, FillerImage("localhost/filler:1", size/2)); err != nil {
		t.Fatal(err)
	}
	if got := status("localhost/filler:1").GetSize(); got < size/2 || got > size/2+16<<10 {
		t.Errorf("re-imported filler image size %d, want %d plus at most 16 KiB", got, size/2)
	}

	// The same content under a second name: both names must stay usable.
	if err := n.ImportImage(ctx, BusyboxImage("localhost/other-busybox:1")); err != nil {
		t.Fatal(err)
	}
	for _, ref := range []string{n.TestImage, "localhost/other-busybox:1"} {
		if status(ref) == nil {
			t.Errorf("%s is not listed after importing the other name", ref)
		}
	}

	if err := n.RemoveImage(ctx, "localhost/filler:1"); err != nil {
		t.Fatal(err)
	}
	if img := status("localhost/filler:1"); img != nil {
		t.Errorf("filler still listed after RemoveImage: %v", img)
	}
	if err := n.ImportImage(ctx, Image{Ref: "busybox:1", Layers: []Layer{FileLayer{{Path: "/a"}}}}); err == nil || !strings.Contains(err.Error(), "registry host") {
		t.Errorf("import of a ref without a host: %v, want an error asking for one", err)
	}
}
