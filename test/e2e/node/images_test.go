//go:build e2e

package nodee2e

import (
	"encoding/base64"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/internal/devnode"
	"github.com/microlet/microlet/internal/testregistry"
)

// TestImagePullsOnAStandaloneNode pulls static pods' images from a real
// registry on loopback (TLS, htpasswd): with the node's config.json in
// root_dir the pod runs; without credentials the container waits in
// ErrImagePull / ImagePullBackOff with the registry's 401 Unauthorized.
// (Static pods may not name pull secrets: validation refuses them.)
func TestImagePullsOnAStandaloneNode(t *testing.T) {
	t.Parallel()
	reg := testregistry.StartT(t, map[string]string{"puller": "right-password"})
	img := devnode.PauseImage("localhost/registry-pause:1")
	for _, name := range []string{"nodeconfig", "none"} {
		reg.PushT(t, img, "e2e/"+name+":1", "puller", "right-password")
	}
	n := startNode(t, nodeOptions{registryCAs: map[string]string{reg.Host: reg.CAFile}})
	auth := base64.StdEncoding.EncodeToString([]byte("puller:right-password"))
	writeFileAtomic(t, filepath.Join(n.rootDir, "config.json"), fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`, reg.Host+"/e2e/nodeconfig", auth))

	manifest := func(name string) string {
		return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: default}
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - {name: app, image: %q}
`, name, reg.Host+"/e2e/"+name+":1")
	}
	n.writeManifest("nodeconfig.yaml", manifest("nodeconfig"))
	n.writeManifest("none.yaml", manifest("none"))

	n.waitPod("nodeconfig", "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	n.waitPod("none", "waiting in ErrImagePull or ImagePullBackOff with the registry's 401 Unauthorized", func(p *v1.Pod) bool {
		cs := containerOf(p, "app")
		if cs == nil || cs.State.Waiting == nil {
			return false
		}
		w := cs.State.Waiting
		return (w.Reason == "ErrImagePull" || w.Reason == "ImagePullBackOff") && strings.Contains(w.Message, "401 Unauthorized")
	})
	// Gone before the devnode closes, so that no retried pull races it.
	n.removeManifest("none.yaml")
	n.waitPodGone("none")
}
