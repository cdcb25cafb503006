//go:build e2e

package nodee2e

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestStaticPodAddUpdateDelete(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})

	n.writeManifest("web.yaml", sleeper("web"))
	first := n.waitPod("web", "running and ready", runningAndReady)

	// Any change to a manifest makes a new pod (a new UID): the old one
	// stops completely before the new one starts.
	n.writeManifest("web.yaml", sleeper("web")+"    env: [{name: VERSION, value: \"2\"}]\n")
	second := n.waitPod("web", "replaced by a new pod, running and ready", func(p *v1.Pod) bool {
		return p.UID != first.UID && runningAndReady(p)
	})
	n.waitRuntimeStopped(first.UID)
	var oldFinished int64
	for _, c := range n.runtimeContainers(first.UID) {
		st, _ := n.containerStatus(c.Id)
		oldFinished = max(oldFinished, st.FinishedAt)
	}
	for _, s := range n.runtimeSandboxes(second.UID) {
		if s.CreatedAt < oldFinished {
			t.Errorf("the new pod's sandbox was created at %d, before the old pod's containers finished (%d)", s.CreatedAt, oldFinished)
		}
	}
	if st := n.runtimeStatus(second.UID, "app"); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("the new pod's container is %s, want running", st.State)
	}

	n.removeManifest("web.yaml")
	n.waitPodGone("web")
	n.waitRuntimeStopped(second.UID)
	// What the pods held goes once they terminated: their directories
	// and their cgroups (sleepers are BestEffort).
	for _, uid := range []types.UID{first.UID, second.UID} {
		dir := filepath.Join(n.rootDir, "pods", string(uid))
		cgroup := path.Join(n.cgroupRoot, "kubepods", "besteffort", "pod"+string(uid))
		n.eventually("pod "+string(uid)+"'s directory and cgroup are removed", func() (bool, string) {
			_, err := os.Stat(dir)
			dirGone := errors.Is(err, fs.ErrNotExist)
			cgroupGone := !n.cgroupExists(cgroup)
			return dirGone && cgroupGone, fmt.Sprintf("directory gone: %t, cgroup gone: %t", dirGone, cgroupGone)
		})
	}
}

// An edited manifest is a new pod (its UID derives from the content) that
// waits for the old one of the same full name to finish terminating. The
// old pod's end wakes it: upstream leaves it to its backoff, 10-15 s after
// the edit. Two edits in a row start only the last content.
func TestStaticPodEditedTwiceRunsTheLastContent(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})

	added := time.Now()
	n.writeManifest("edited.yaml", sleeper("edited"))
	first := n.waitPod("edited", "running and ready", runningAndReady)
	t.Logf("add: running and ready %s after the manifest was written", time.Since(added).Round(10*time.Millisecond))

	edited := time.Now()
	n.writeManifest("edited.yaml", sleeper("edited")+"    env: [{name: VERSION, value: \"2\"}]\n")
	second := n.waitPod("edited", "replaced by a new pod, running and ready", func(p *v1.Pod) bool {
		return p.UID != first.UID && runningAndReady(p)
	})
	t.Logf("edit: the new pod running and ready %s after the manifest was written", time.Since(edited).Round(10*time.Millisecond))

	n.writeManifest("edited.yaml", sleeper("edited")+"    env: [{name: VERSION, value: \"3\"}]\n")
	n.writeManifest("edited.yaml", sleeper("edited")+"    env: [{name: VERSION, value: \"4\"}]\n")
	last := n.waitPod("edited", "replaced by the last content, running and ready", func(p *v1.Pod) bool {
		return p.UID != first.UID && p.UID != second.UID && runningAndReady(p) &&
			len(p.Spec.Containers[0].Env) == 1 && p.Spec.Containers[0].Env[0].Value == "4"
	})
	n.waitRuntimeStopped(second.UID)
	if st := n.runtimeStatus(last.UID, "app"); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("the last pod's container is %s, want running", st.State)
	}
}
