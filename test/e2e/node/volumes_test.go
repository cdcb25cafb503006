//go:build e2e

package nodee2e

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestDownwardAPIVolumeOnAStandaloneNode: a static pod's downwardAPI
// volume, and a projected one of downwardAPI sources, need no API server:
// the container reads its name and memory limit from files, behind
// upstream's ..data layout, read-only; they go with the pod.
func TestDownwardAPIVolumeOnAStandaloneNode(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	n.writeManifest("info.yaml", sleeper("info")+`    resources: {limits: {memory: 64Mi}}
    volumeMounts: [{name: info, mountPath: /info}, {name: proj, mountPath: /proj}]
  volumes:
  - name: info
    downwardAPI:
      items:
      - {path: name, fieldRef: {fieldPath: metadata.name}}
      - {path: mem, resourceFieldRef: {containerName: app, resource: limits.memory, divisor: 1Mi}}
  - name: proj
    projected:
      sources:
      - downwardAPI: {items: [{path: meta/labels, fieldRef: {fieldPath: metadata.labels}}]}
`)
	p := n.waitPod("info", "running and ready", runningAndReady)
	id := runtimeID(containerOf(p, "app"))
	out, code := n.exec(id, "sh", "-c", "cat /info/name; echo; cat /info/mem; echo; readlink /proj/meta; touch /info/x 2>&1 || echo read-only")
	want := fmt.Sprintf("%s\n64\n..data/meta\n", p.Name)
	if code != 0 || !strings.HasPrefix(out, want) || !strings.Contains(out, "read-only") {
		t.Errorf("the container read %q (exit %d), want %q and a read-only volume", out, code, want)
	}

	// The pod's end takes its volumes, tmpfs mounts included.
	n.removeManifest("info.yaml")
	n.waitPodGone("info")
	dir := filepath.Join(n.rootDir, "pods", string(p.UID))
	n.eventually("the pod's directory removed", func() (bool, string) {
		_, err := os.Stat(dir)
		return errors.Is(err, fs.ErrNotExist), fmt.Sprint(err)
	})
}
