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
