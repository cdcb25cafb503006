//go:build e2e

package devicese2e

import (
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"

	"github.com/microlet/microlet/internal/devnode"
	"github.com/microlet/microlet/internal/e2e"
)

// kubeletHostLock is devnode's lock on the host-wide device plugin
// directory: whoever holds it may use /var/lib/kubelet/device-plugins/.
const kubeletHostLock = "/run/microlet-devnode/kubelet.lock"

// lockWait bounds the wait for kubeletHostLock when the test has no
// deadline.
const lockWait = 20 * time.Minute

// sampleResource is what the upstream sample device plugin offers: two
// devices, Dev-1 and Dev-2, each mounted as the file /tmp/<id>.
const sampleResource = "example.com/resource"

// A device plugin nobody here wrote, upstream's sample device plugin,
// registers with microlet-devices-kubernetes on the default directory as
// with a kubelet, and a pod asking for its resource runs with its device.
func TestUpstreamSampleDevicePlugin(t *testing.T) {
	tools, err := devnode.KubeToolsDir()
	if err != nil {
		t.Fatal(err)
	}
	sample := filepath.Join(tools, "sample-device-plugin")
	if _, err := os.Stat(sample); err != nil {
		t.Fatalf("no upstream sample device plugin (make kube-tools builds it): %v", err)
	}
	lockDevicePluginDir(t)
	n := startNode(t, "plugin \"devices\" \"kubernetes\" {}\n")
	waitForKubeletSocket(t)
	plugin := startSamplePlugin(t, sample)
	n.eventually("the sample plugin registered", func() (bool, string) {
		select {
		case <-plugin.Exited():
			t.Fatalf("the sample device plugin exited:\n%s", plugin.log.String())
		default:
		}
		return strings.Contains(n.log.String(), "device plugin registered"), "no registration in microlet's log yet"
	})

	n.addPod("sample", devicePod("sample", sampleResource, 1))
	pod := n.running("sample")
	out := n.exec(pod, "sh", "-c", "ls /tmp/Dev-*")
	if got := strings.TrimSpace(out); got != "/tmp/Dev-1" && got != "/tmp/Dev-2" {
		t.Errorf("the container's /tmp/Dev-*: %q, want exactly one of the sample plugin's device files", out)
	}
}

// lockDevicePluginDir takes devnode's host lock for the rest of the test,
// and removes afterwards what the test added to the directory (the
// directory itself, if it did not exist).
func lockDevicePluginDir(t *testing.T) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(kubeletHostLock), 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(kubeletHostLock, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	// A benchmark may hold the lock for minutes (an upstream kubelet run):
	// wait for it as long as the test may run.
	deadline := time.Now().Add(lockWait)
	if d, ok := t.Deadline(); ok {
		deadline = d.Add(-2 * waitLimit)
	}
	for waited := false; ; waited = true {
		err := unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			break
		}
		if !errors.Is(err, unix.EWOULDBLOCK) || time.Now().After(deadline) {
			f.Close()
			t.Fatalf("lock %s (another test uses %s): %v", kubeletHostLock, pluginapi.DevicePluginPath, err)
		}
		if !waited {
			t.Logf("waiting for %s: another test uses %s", kubeletHostLock, pluginapi.DevicePluginPath)
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Cleanup(func() { f.Close() })

	dir := filepath.Clean(pluginapi.DevicePluginPath)
	var before []string
	if entries, err := os.ReadDir(dir); err == nil {
		for _, e := range entries {
			before = append(before, e.Name())
		}
	} else if os.IsNotExist(err) {
		made := filepath.Dir(dir) // /var/lib/kubelet
		if _, err := os.Stat(made); err == nil {
			made = dir
		}
		t.Cleanup(func() {
			if err := os.RemoveAll(made); err != nil {
				t.Errorf("removing %s: %v", made, err)
			}
		})
		return
	}
	t.Cleanup(func() {
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if !slices.Contains(before, e.Name()) {
				if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
					t.Errorf("removing %s: %v", e.Name(), err)
				}
			}
		}
	})
}

// waitForKubeletSocket waits until the bridge serves kubelet.sock: the
// sample plugin registers once, at start, and panics if it cannot.
func waitForKubeletSocket(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for {
		conn, err := net.Dial("unix", pluginapi.KubeletSocket)
		if err == nil {
			conn.Close()
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the bridge never served %s: %v", pluginapi.KubeletSocket, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// pluginProcess is a running device plugin.
type pluginProcess struct {
	*e2e.Process
	log *e2e.SyncBuffer
}

// startSamplePlugin runs the sample plugin as its DaemonSet would, until
// the test ends; then it is stopped by its pid and the device files its
// Allocate made in /tmp are removed.
func startSamplePlugin(t *testing.T, binary string) *pluginProcess {
	t.Helper()
	var existing []string
	for _, f := range []string{"/tmp/Dev-1", "/tmp/Dev-2"} {
		if _, err := os.Lstat(f); err == nil {
			existing = append(existing, f)
		}
	}
	// Registered first, so run after the plugin is stopped.
	t.Cleanup(func() {
		for _, f := range []string{"/tmp/Dev-1", "/tmp/Dev-2"} {
			if !slices.Contains(existing, f) {
				os.Remove(f)
			}
		}
	})
	return runPlugin(t, "the sample device plugin", exec.Command(binary))
}

// runPlugin starts cmd, a device plugin, until the test ends; then it is
// stopped by its pid (SIGTERM, SIGKILL after 10 s) and, if the test
// failed, its log goes to the test log.
func runPlugin(t *testing.T, what string, cmd *exec.Cmd) *pluginProcess {
	t.Helper()
	p := &pluginProcess{log: &e2e.SyncBuffer{}}
	cmd.Stdout, cmd.Stderr = p.log, p.log
	var err error
	if p.Process, err = e2e.StartProcess(cmd); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if !p.Stop(10 * time.Second) {
			t.Errorf("%s did not exit after SIGTERM; killing it", what)
		}
		if t.Failed() {
			t.Logf("%s's log:\n%s", what, p.log.String())
		}
	})
	return p
}
