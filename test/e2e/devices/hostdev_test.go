//go:build e2e

package devicese2e

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/internal/prereq"
)

const fuse = "microlet.dev/fuse"

// hostdevFuse offers /dev/fuse as one device of microlet.dev/fuse.
const hostdevFuse = `plugin "devices" "hostdev" {
  config {
    resources = [
      { name = "microlet.dev/fuse", paths = ["/dev/fuse"], permissions = "rwm" },
    ]
  }
}
`

// checkpointEntries are the allocations in the core's device checkpoint,
// as "<pod uid> <container> <resource> <devices>".
func checkpointEntries(t *testing.T, rootDir string) []string {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(rootDir, "device-plugins", "microlet_internal_checkpoint"))
	if err != nil {
		t.Fatalf("reading the device checkpoint: %v", err)
	}
	var file struct {
		Data struct {
			PodDeviceEntries []struct {
				PodUID, ContainerName, ResourceName string
				DeviceIDs                           map[string][]string
			}
		}
	}
	if err := json.Unmarshal(raw, &file); err != nil {
		t.Fatalf("decoding the device checkpoint: %v", err)
	}
	var out []string
	for _, e := range file.Data.PodDeviceEntries {
		var ids []string
		for _, perNode := range e.DeviceIDs {
			ids = append(ids, perNode...)
		}
		out = append(out, e.PodUID+" "+e.ContainerName+" "+e.ResourceName+" "+strings.Join(ids, ","))
	}
	return out
}

// A pod asking for microlet.dev/fuse gets /dev/fuse in its container; a
// second one is refused, the node having one; the allocation survives a
// crash of the core without the pod restarting.
func TestHostdevFuse(t *testing.T) {
	if info, err := os.Stat("/dev/fuse"); err != nil || info.Mode()&fs.ModeCharDevice == 0 {
		prereq.Missing(t, "this host has no /dev/fuse character device (%v); load the fuse module: modprobe fuse", err)
	}
	n := startNode(t, hostdevFuse)

	n.addPod("fuse", devicePod("fuse", fuse, 1))
	pod := n.running("fuse")
	if out := n.exec(pod, "ls", "-l", "/dev/fuse"); !strings.HasPrefix(out, "c") {
		t.Fatalf("ls -l /dev/fuse in the container: %q, want a character device", out)
	}
	want := []string{string(pod.UID) + " app " + fuse + " /dev/fuse"}
	if got := checkpointEntries(t, n.rootDir); !slices.Equal(got, want) {
		t.Errorf("checkpoint allocations %q, want %q", got, want)
	}

	n.addPod("fuse-two", devicePod("fuse-two", fuse, 1))
	refused := n.refused("fuse-two")
	wantMessage := "Pod was rejected: Allocate failed due to requested number of devices unavailable for microlet.dev/fuse. Requested: 1, Available: 0, which is unexpected"
	if refused.Status.Reason != "UnexpectedAdmissionError" || refused.Status.Message != wantMessage {
		t.Errorf("the second pod's status: reason %q message %q; want UnexpectedAdmissionError, %q", refused.Status.Reason, refused.Status.Message, wantMessage)
	}

	// A crash of the core: the pod keeps running, its container and its
	// device unchanged.
	containerID := pod.Status.ContainerStatuses[0].ContainerID
	n.killCore()
	n.startCore()
	again := n.running("fuse")
	if got := again.Status.ContainerStatuses[0]; got.ContainerID != containerID || got.RestartCount != 0 {
		t.Errorf("after the core's restart the container is %s (restarts %d), want %s not restarted", got.ContainerID, got.RestartCount, containerID)
	}
	if out := n.exec(again, "ls", "-l", "/dev/fuse"); !strings.HasPrefix(out, "c") {
		t.Errorf("ls -l /dev/fuse after the core's restart: %q", out)
	}
	if got := checkpointEntries(t, n.rootDir); !slices.Equal(got, want) {
		t.Errorf("checkpoint allocations after the restart %q, want %q", got, want)
	}
	// The restored allocation still holds the only device.
	if refused := n.refused("fuse-two"); refused.Status.Reason != "UnexpectedAdmissionError" {
		t.Errorf("after the restart the second pod's status: %+v, want refused again", refused.Status)
	}
}

// refused waits until the pod is refused at admission.
func (n *testNode) refused(name string) *v1.Pod {
	n.t.Helper()
	var pod *v1.Pod
	n.eventually("pod "+name+" refused", func() (bool, string) {
		pod = n.pod(name)
		if pod == nil {
			return false, "not listed"
		}
		return pod.Status.Phase == v1.PodFailed, fmt.Sprintf("phase %q reason %q message %q", pod.Status.Phase, pod.Status.Reason, pod.Status.Message)
	})
	return pod
}
