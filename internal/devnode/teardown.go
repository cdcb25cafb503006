package devnode

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/prometheus/procfs"
	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const (
	// closeTimeout bounds all of Close.
	closeTimeout = 2 * time.Minute
	// containerdGrace is how long containerd gets to exit on SIGTERM.
	containerdGrace = 10 * time.Second
	// shimSocketDir is where containerd 1.6 puts every shim's socket,
	// whatever its state directory (runtime/v2/shim.SocketAddress).
	shimSocketDir = "/run/containerd/s"
)

// Close stops and removes everything the node started and made: first
// kubelets started on it, then every pod sandbox through the CRI (so CNI
// DEL runs and network namespaces are released), then containerd, then
// whatever a crash or a hang left: containers in runc's state, shims
// (found by their -address argument), CNI attachments, mounts under the
// node's directories, the bridge. Dir and RunDir go last. Close is
// idempotent and safe after a failed Start; a second call waits for the
// first to finish (the lastresort watchdog may call it while a test's
// cleanup does). It does every step even when one fails, and reports all
// failures.
func (n *Node) Close() error {
	n.mu.Lock()
	if n.closed {
		done := n.closeDone
		n.mu.Unlock()
		<-done
		return nil
	}
	n.closed = true
	n.closeDone = make(chan struct{})
	defer close(n.closeDone)
	kubelets := n.kubelets
	n.mu.Unlock()
	if n.unregister != nil {
		defer n.unregister()
	}

	var errs []error
	for _, k := range kubelets {
		errs = append(errs, k.Close())
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	clean, err := n.teardown(ctx)
	errs = append(errs, err)
	if clean {
		errs = append(errs, releaseSlot(n.slot))
	}
	err = errors.Join(errs...)
	if err != nil {
		n.log.Error("node cleanup incomplete", "error", err)
	} else {
		n.log.Debug("node closed")
	}
	return err
}

func (n *Node) containerdRunning() bool {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.containerd.running()
}

// adoptContainerd takes over a containerd left by a process that died, if
// pid still is that containerd.
func (n *Node) adoptContainerd(pid int) {
	if pid > 0 && processHasArg(pid, n.Socket) {
		n.containerd = adoptProcess(pid)
		n.PID = pid
	}
}

// teardown is Close without releasing the slot, which it leaves to the
// caller when clean: nothing is mounted any more and Dir is gone.
func (n *Node) teardown(ctx context.Context) (clean bool, err error) {
	var errs []error
	add := func(step string, err error) {
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", step, err))
		}
	}
	n.mu.Lock()
	containerd := n.containerd
	n.mu.Unlock()
	if containerd.running() {
		if n.conn == nil {
			add("connect to the CRI", n.dial())
		}
		if n.conn != nil {
			if err := n.removePodSandboxes(ctx); err != nil && !exitsSoon(containerd) {
				add("remove pod sandboxes", err)
			}
		}
	}
	add("stop containerd", containerd.stop(containerdGrace))
	add("delete leftover containers", n.deleteRuncContainers())
	add("kill leftover shims", n.killShims())
	add("CNI DEL of leftover attachments", cniDelLeftovers(ctx, n.Network, n.sandboxDirs()))
	mountsErr := UnmountUnder(n.Dir, n.RunDir)
	add("unmount", mountsErr)
	add("delete the bridge", deleteLink(n.Bridge))
	if n.conn != nil {
		n.conn.Close()
	}
	// Never remove a tree that still has something mounted inside:
	// RemoveAll would descend into it.
	if mountsErr != nil {
		return false, errors.Join(errs...)
	}
	add("remove the node directory", os.RemoveAll(n.Dir))
	return true, errors.Join(errs...)
}

// exitsSoon reports whether containerd is gone or going: then a failed CRI
// call is no news, and the steps after it clean up.
func exitsSoon(p process) bool {
	select {
	case <-p.exited:
		return true
	case <-time.After(2 * time.Second):
		return false
	}
}

// sandboxDirs returns the IDs of the sandboxes the CRI plugin keeps state
// for, read from its state directory: what it never removed.
func (n *Node) sandboxDirs() []string {
	entries, err := os.ReadDir(filepath.Join(n.stateDir, "io.containerd.grpc.v1.cri", "sandboxes"))
	if err != nil {
		return nil
	}
	ids := make([]string, 0, len(entries))
	for _, e := range entries {
		ids = append(ids, e.Name())
	}
	return ids
}

// removePodSandboxes stops every sandbox, then removes them: stopping tears
// down the network (CNI DEL) and the containers; removing drops the rest.
func (n *Node) removePodSandboxes(ctx context.Context) error {
	resp, err := n.runtime.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range resp.GetItems() {
		if err := n.stopPodSandbox(ctx, s.GetId()); err != nil {
			errs = append(errs, fmt.Errorf("stop sandbox %s (%s): %w", s.GetId(), s.GetMetadata().GetName(), err))
		}
	}
	for _, s := range resp.GetItems() {
		if err := n.removePodSandbox(ctx, s.GetId()); err != nil {
			errs = append(errs, fmt.Errorf("remove sandbox %s (%s): %w", s.GetId(), s.GetMetadata().GetName(), err))
		}
	}
	return errors.Join(errs...)
}

// stopPodSandbox stops a sandbox, trying again twice: a sandbox whose shim
// is exiting as the node closes fails with "ttrpc: closed", and a second
// stop finds it stopped.
func (n *Node) stopPodSandbox(ctx context.Context, id string) error {
	return tryAgain(ctx, 3, func() error {
		_, err := n.runtime.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: id})
		return err
	})
}

// removePodSandbox removes a stopped sandbox, trying again for 5 s: a
// container whose start was under way when the agent was stopped stays
// "in starting state" until containerd's own start call returns, and
// cannot be removed until then.
func (n *Node) removePodSandbox(ctx context.Context, id string) error {
	return tryAgain(ctx, 10, func() error {
		_, err := n.runtime.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id})
		return err
	})
}

// tryAgain calls fn up to tries times, 500 ms apart, until it succeeds.
func tryAgain(ctx context.Context, tries int, fn func() error) error {
	var err error
	for range tries {
		if err = fn(); err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(500 * time.Millisecond):
		}
	}
	return err
}

// killShims kills the shims of this node's containerd, found by the
// "-address SOCKET" of their command lines, and removes their sockets.
func (n *Node) killShims() error {
	pids, err := processesWithArg("-address", n.Socket)
	if err != nil {
		return err
	}
	var errs []error
	for _, pid := range pids {
		socket := shimSocket(pid, n.Socket)
		n.log.Warn("killing a shim containerd left behind", "pid", pid)
		if err := adoptProcess(pid).kill(); err != nil {
			errs = append(errs, err)
			continue
		}
		if socket != "" {
			if err := os.Remove(socket); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// shimSocket returns the socket path of the shim pid, computed as
// containerd 1.6 names it: sha256 of <containerd address>/<namespace>/<id>
// under /run/containerd/s. Empty if the command line lacks them.
func shimSocket(pid int, address string) string {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return ""
	}
	args, err := p.CmdLine()
	if err != nil {
		return ""
	}
	arg := func(flag string) string {
		if i := slices.Index(args, flag); i >= 0 && i+1 < len(args) {
			return args[i+1]
		}
		return ""
	}
	ns, id := arg("-namespace"), arg("-id")
	if ns == "" || id == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(filepath.Join(address, ns, id)))
	return filepath.Join(shimSocketDir, hex.EncodeToString(sum[:]))
}

// UnmountUnder unmounts every mount at or below the given directories,
// deepest first, lazily when busy. It fails if any mount is left. An agent
// that ran on the node leaves its pods' volume mounts (tmpfs) below its
// root directory, as the kubelet does when it stops.
func UnmountUnder(dirs ...string) error {
	var prefixes []string
	for _, d := range dirs {
		prefixes = append(prefixes, d)
		if real, err := filepath.EvalSymlinks(d); err == nil && real != d {
			prefixes = append(prefixes, real)
		}
	}
	var left []string
	// Mounts can be stacked on one point; a few rounds take them all.
	for round := 0; round < 5; round++ {
		var err error
		left, err = mountsUnder(prefixes)
		if err != nil {
			return err
		}
		if len(left) == 0 {
			return nil
		}
		for _, mp := range left {
			err := unix.Unmount(mp, 0)
			if errors.Is(err, unix.EBUSY) {
				err = unix.Unmount(mp, unix.MNT_DETACH)
			}
			if err != nil && !errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
				return fmt.Errorf("unmount %s: %w", mp, err)
			}
		}
	}
	return fmt.Errorf("still mounted: %s", strings.Join(left, ", "))
}

// mountsUnder lists the mount points at or below any of prefixes, deepest
// first.
func mountsUnder(prefixes []string) ([]string, error) {
	mounts, err := procfs.GetMounts()
	if err != nil {
		return nil, err
	}
	var points []string
	for _, m := range mounts {
		for _, p := range prefixes {
			if m.MountPoint == p || strings.HasPrefix(m.MountPoint, p+"/") {
				points = append(points, m.MountPoint)
				break
			}
		}
	}
	sort.Slice(points, func(i, j int) bool { return len(points[i]) > len(points[j]) })
	return points, nil
}

// deleteLink deletes a network link if it exists.
func deleteLink(name string) error {
	if _, err := os.Stat(filepath.Join("/sys/class/net", name)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if out, err := exec.Command("ip", "link", "delete", name).CombinedOutput(); err != nil {
		return fmt.Errorf("ip link delete %s: %w: %s", name, err, strings.TrimSpace(string(out)))
	}
	return nil
}
