//go:build e2e

package nodee2e

import (
	"fmt"
	"strings"
)

// untilTERM is a container command that runs until SIGTERM and then exits
// 0 (within a second: sh runs the trap once the sleep ends).
const untilTERM = `["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]`

// sleeper is a pod with one container that runs until it is stopped.
func sleeper(name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  terminationGracePeriodSeconds: 5
  containers:
  - name: app
    image: IMAGE
    command: %s
`, name, untilTERM)
}

// podList is a PodList of Pod manifests, in YAML.
func podList(manifests ...string) string {
	var b strings.Builder
	b.WriteString("apiVersion: v1\nkind: PodList\nitems:\n")
	for _, m := range manifests {
		b.WriteString("- " + strings.ReplaceAll(strings.TrimSuffix(m, "\n"), "\n", "\n  ") + "\n")
	}
	return b.String()
}
