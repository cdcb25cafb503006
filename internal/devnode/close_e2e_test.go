//go:build e2e

package devnode

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/containernetworking/cni/libcni"
	"github.com/prometheus/procfs"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/internal/freeport"
)

// leftovers describes what a closed node must not have left behind.
type leftovers struct {
	socket, dir, runDir, bridge, network string
	pids                                 []int // containerd's and its shims'
	shimSockets                          []string
	sandboxes                            []string
}

func snapshotForClose(ctx context.Context, t *testing.T, n *Node) leftovers {
	t.Helper()
	l := leftovers{socket: n.Socket, dir: n.Dir, runDir: n.RunDir, bridge: n.Bridge, network: n.Network, pids: []int{n.PID}}
	shims, err := processesWithArg("-address", n.Socket)
	if err != nil {
		t.Fatal(err)
	}
	if len(shims) == 0 {
		t.Fatal("no shim runs, so the check below would prove nothing")
	}
	for _, pid := range shims {
		sock := shimSocket(pid, n.Socket)
		if _, err := os.Stat(sock); err != nil {
			t.Fatalf("shim %d: expected its socket at %s: %v", pid, sock, err)
		}
		l.shimSockets = append(l.shimSockets, sock)
	}
	l.pids = append(l.pids, shims...)
	list, err := n.RuntimeClient().ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.GetItems() {
		l.sandboxes = append(l.sandboxes, s.GetId())
	}
	return l
}

// check fails the test for anything left. With slotReused, a new node runs
// in the same slot, so its socket, run directory and bridge are no news.
func (l leftovers) check(t *testing.T, slotReused bool) {
	t.Helper()
	for _, pid := range l.pids {
		if _, err := processStart(pid); err == nil {
			t.Errorf("pid %d still runs", pid)
		}
	}
	paths := append([]string{l.dir}, l.shimSockets...)
	mountRoots := []string{l.dir}
	if !slotReused {
		for _, flag := range []string{"-address", "--address"} {
			if pids, _ := processesWithArg(flag, l.socket); len(pids) > 0 {
				t.Errorf("processes still run with %s %s: %v", flag, l.socket, pids)
			}
		}
		paths = append(paths, l.runDir, filepath.Join("/sys/class/net", l.bridge))
		mountRoots = append(mountRoots, l.runDir)
	}
	if mounts, _ := mountsUnder(mountRoots); len(mounts) > 0 {
		t.Errorf("still mounted: %v", mounts)
	}
	for _, p := range paths {
		if _, err := os.Lstat(p); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s is still there (%v)", p, err)
		}
	}
	for _, id := range l.sandboxes {
		attachments, err := libcni.NewCNIConfig(nil, nil).GetCachedAttachments(id)
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range attachments {
			t.Errorf("CNI cache still records sandbox %s on %s", a.ContainerID, a.Network)
		}
	}
}

// startForClose starts a node the test closes itself, with a pod and a
// running container on it.
func startForClose(t *testing.T) (*Node, leftovers) {
	t.Helper()
	n := StartT(t) // its cleanup's Close is a no-op once the test closed it
	ctx := testContext(t)
	p := runPod(ctx, t, n, "victim")
	startContainer(ctx, t, n, p, "sleeper", "sleep", "3600")
	return n, snapshotForClose(ctx, t, n)
}

func TestCloseLeavesNothing(t *testing.T) {
	t.Parallel()
	n, l := startForClose(t)
	if err := n.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	l.check(t, false)
	if err := n.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
}

// After a runtime crash Close cannot go through the CRI; it still must
// clean up the containers, shims, network and mounts containerd left.
func TestCloseAfterContainerdCrash(t *testing.T) {
	t.Parallel()
	n, l := startForClose(t)
	if err := syscall.Kill(n.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := n.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	l.check(t, false)
}

// A node whose process died without Close is cleaned up by the next Start.
func TestStartReapsAbandonedNode(t *testing.T) {
	t.Parallel()
	n, l := startForClose(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	rec, err := readRecord(n.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	rec.OwnerPID = dead.Process.Pid
	if err := writeRecord(n.RunDir, rec); err != nil {
		t.Fatal(err)
	}
	next := StartT(t)
	l.check(t, next.RunDir == l.runDir)
}

// A hostPort reaches the pod over the host's loopback (portmap), and Close
// removes the forwarding rules.
func TestHostPortAndItsCleanup(t *testing.T) {
	t.Parallel()
	n := StartT(t)
	ctx := testContext(t)
	port, err := freeport.Port()
	if err != nil {
		t.Fatal(err)
	}
	config := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "hostport", Uid: "hostport-uid", Namespace: "default"},
		PortMappings: []*runtimeapi.PortMapping{{Protocol: runtimeapi.Protocol_TCP, ContainerPort: 8080, HostPort: int32(port)}},
		Linux:        &runtimeapi.LinuxPodSandboxConfig{},
	}
	resp, err := n.RuntimeClient().RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: config})
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	p := pod{id: resp.GetPodSandboxId(), config: config}
	startContainer(ctx, t, n, p, "server", "sh", "-c",
		"mkdir -p /tmp/www && echo forwarded > /tmp/www/index.html && exec httpd -f -p 8080 -h /tmp/www")
	body, err := httpGet(ctx, "http://"+net.JoinHostPort("127.0.0.1", strconv.Itoa(port))+"/index.html")
	if err != nil || body != "forwarded\n" {
		t.Fatalf("GET over the hostPort: %q, %v", body, err)
	}
	if !strings.Contains(natRules(t), p.id) {
		t.Fatal("no nat rule names the sandbox, so the check below would prove nothing")
	}
	if err := n.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if strings.Contains(natRules(t), p.id) {
		t.Errorf("nat rules for sandbox %s remain after Close", p.id)
	}
}

// natRules returns the nat table; portmap's rules name the sandbox in
// their comments.
func natRules(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("iptables-save", "-t", "nat").Output()
	if err != nil {
		t.Fatalf("iptables-save: %v", err)
	}
	return string(out)
}

// A teardown whose time ran out before it got to the leftover containers
// (a pod of many containers kept the runtime busy) still deletes them, and
// no container process survives it: each is found by its PID and killed.
func TestCloseOutOfTimeLeavesNoContainerProcess(t *testing.T) {
	t.Parallel()
	n, l := startForClose(t)
	var containers []int
	for _, shim := range l.pids[1:] {
		children, err := childProcesses(shim)
		if err != nil {
			t.Fatal(err)
		}
		containers = append(containers, children...)
	}
	if len(containers) == 0 {
		t.Fatal("no container process runs under the shims, so the check below would prove nothing")
	}
	spent, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := n.teardown(spent)
	t.Logf("teardown with no time left: %v", err)
	for _, pid := range containers {
		if _, err := processStart(pid); err == nil {
			t.Errorf("container process %d still runs", pid)
			syscall.Kill(pid, syscall.SIGKILL)
		}
	}
	if err := n.Close(); err != nil {
		t.Errorf("Close after it: %v", err)
	}
	l.check(t, false)
}

// childProcesses are the PIDs whose parent is pid.
func childProcesses(pid int) ([]int, error) {
	procs, err := procfs.AllProcs()
	if err != nil {
		return nil, err
	}
	var out []int
	for _, p := range procs {
		if stat, err := p.Stat(); err == nil && stat.PPID == pid {
			out = append(out, p.PID)
		}
	}
	return out, nil
}
