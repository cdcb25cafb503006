//go:build e2e

package pressuree2e

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/internal/devnode"
	"github.com/microlet/microlet/internal/prereq"
)

// The tests in this file are not parallel, with each other or with anything
// in this package: their thresholds follow the machine's free disk space,
// which the other tests change (writing emptyDirs, importing images).

// TestDiskHogEvicted: a pod that fills its emptyDir past a nodefs threshold
// set 1Gi below the free space of the moment is evicted after node-level
// reclaim failed to help; another pod runs on.
func TestDiskHogEvicted(t *testing.T) {
	threshold := freeBytes(t, os.TempDir()) - 1<<30
	n := Start(t, Options{Plugins: []Plugin{
		{Kind: "cgroup", Name: "default"},
		{Kind: "eviction", Name: "kubelet", Body: fmt.Sprintf("hard = [\"nodefs.available<%d\"]\npressure_transition_period = \"0s\"", threshold)},
		{Kind: "imagegc", Name: "lru"},
		// Walk volumes every second, so that ranking sees the hog's writes.
		{Kind: "stats", Name: "default", Body: `disk_usage_period = "1s"`},
	}})
	if free := freeBytes(t, n.RootDir); free < threshold+512<<20 {
		prereq.Missing(t, "free disk space: the disk filled up meanwhile (%d bytes free, threshold %d): something else writes", free, threshold)
	}
	n.Push(PodSpec{Name: "innocent", Script: WaitForTermination}.Manifest())
	n.WaitPod("innocent", "running", Running)
	// 2Gi in 64Mi steps: past the threshold halfway.
	n.Push(PodSpec{Name: "hog", Script: FillScript(64, 32, "0.1"), Volume: true}.Manifest())

	hog := n.WaitPod("hog", "evicted", Evicted)
	n.WaitStopped("hog")
	if !strings.HasPrefix(hog.Status.Message, "The node was low on resource: ephemeral-storage.") {
		t.Errorf("hog's message %q does not name ephemeral-storage", hog.Status.Message)
	}
	n.expectEvictions("nodefs.available", 1)
	log := n.Log()
	reclaim, evict := strings.Index(log, "node-level reclaim"), strings.Index(log, "evicting pod")
	if reclaim < 0 || reclaim > evict {
		t.Errorf("no node-level reclaim was logged before the eviction")
	}
	if p := n.Pod("innocent"); p == nil || !Running(p) || restarts(p) > 0 {
		t.Errorf("innocent pod after the eviction: %s, want it running, never restarted", describe(p))
	}
}

// TestImageGC: with the imagegc thresholds at 1 % and 0 %, image GC removes
// every image no container uses and keeps the image a pod runs and the
// sandbox image. Image GC runs when the core starts, then every 5 minutes:
// the test starts a core with the kubelet's thresholds (nothing to remove),
// runs a pod, then restarts the core with the test's.
func TestImageGC(t *testing.T) {
	fillers := []devnode.Image{devnode.FillerImage("localhost/filler-a:1", 8<<20), devnode.FillerImage("localhost/filler-b:1", 8<<20)}
	plugins := func(imagegc string) []Plugin {
		return []Plugin{{Kind: "cgroup", Name: "default"}, {Kind: "eviction", Name: "kubelet"}, {Kind: "imagegc", Name: "lru", Body: imagegc}, {Kind: "stats", Name: "default"}}
	}
	n := Start(t, Options{Plugins: plugins(""), Images: fillers})
	n.Push(PodSpec{Name: "user", Script: WaitForTermination}.Manifest())
	user := n.WaitPod("user", "running", Running)
	if got := n.imageTags(); !containsAll(got, "localhost/filler-a:1", "localhost/filler-b:1", devnode.DefaultTestImage) {
		t.Fatalf("before: images %v; the kubelet's thresholds removed some", got)
	}

	n.WriteConfig(plugins("high_threshold_percent = 1\nlow_threshold_percent = 0\nminimum_age = \"0s\""))
	n.RestartCore()
	n.Eventually("the unused images are removed", func() (bool, string) {
		got := n.imageTags()
		return !slices.Contains(got, "localhost/filler-a:1") && !slices.Contains(got, "localhost/filler-b:1"), strings.Join(got, " ")
	})
	if got := n.imageTags(); !containsAll(got, devnode.DefaultTestImage, devnode.DefaultPauseImage) {
		t.Errorf("after: images %v; want the pod's image and the sandbox image kept", got)
	}
	if p := n.Pod("user"); p == nil || !Running(p) || p.UID != user.UID || restarts(p) > 0 {
		t.Errorf("the pod using the image: %s, want it running, never restarted", describe(p))
	}
	// The core logs the collection once its removals returned: the images
	// may be seen gone before the line is read.
	n.Eventually("image GC logs the bytes freed", func() (bool, string) {
		line := logLine(n.Log(), "image garbage collection")
		return strings.Contains(line, "bytes_freed="), line
	})
}

// imageTags lists the tags of the node's images.
func (n *Node) imageTags() []string {
	n.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	resp, err := n.Dev.ImageClient().ListImages(ctx, &runtimeapi.ListImagesRequest{})
	if err != nil {
		n.t.Fatalf("ListImages: %v", err)
	}
	var tags []string
	for _, img := range resp.Images {
		tags = append(tags, img.RepoTags...)
	}
	slices.Sort(tags)
	return tags
}

func containsAll(list []string, want ...string) bool {
	for _, w := range want {
		if !slices.Contains(list, w) {
			return false
		}
	}
	return true
}

// freeBytes is what an unprivileged user may still write on path's
// filesystem, as nodefs.available counts it.
func freeBytes(t *testing.T, path string) int64 {
	t.Helper()
	var st unix.Statfs_t
	if err := unix.Statfs(path, &st); err != nil {
		t.Fatal(err)
	}
	return int64(st.Bavail) * st.Bsize
}
