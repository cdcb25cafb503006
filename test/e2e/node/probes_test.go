//go:build e2e

package nodee2e

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// The manifests of docs/probes.md. Probes go to the pod's address on the
// node's own bridge, or run in the container.
const (
	livenessFails = `apiVersion: v1
kind: Pod
metadata:
  name: liveness
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: app
    image: IMAGE
    command: ["sh", "-c", "touch /tmp/alive; sleep 5; rm /tmp/alive; sleep 3600"]
    livenessProbe:
      exec: {command: ["cat", "/tmp/alive"]}
      periodSeconds: 1
      failureThreshold: 2
      terminationGracePeriodSeconds: 1
`
	readinessHTTP = `apiVersion: v1
kind: Pod
metadata:
  name: readiness
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: web
    image: IMAGE
    command: ["sh", "-c", "mkdir -p /www && touch /www/ready && httpd -f -p 8080 -h /www"]
    ports: [{name: http, containerPort: 8080}]
    readinessProbe:
      httpGet: {path: /ready, port: http}
      periodSeconds: 1
`
	startupDelaysLiveness = `apiVersion: v1
kind: Pod
metadata:
  name: startup
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: slow
    image: IMAGE
    command: ["sh", "-c", "sleep 8; touch /tmp/up; sleep 3600"]
    startupProbe:
      exec: {command: ["cat", "/tmp/up"]}
      periodSeconds: 1
      failureThreshold: 30
    livenessProbe:
      exec: {command: ["cat", "/tmp/up"]}
      periodSeconds: 1
      failureThreshold: 1
`
)

func TestProbes(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	n.writeManifest("liveness.yaml", livenessFails)
	n.writeManifest("readiness.yaml", readinessHTTP)
	n.writeManifest("startup.yaml", startupDelaysLiveness)

	t.Run("a failing liveness probe restarts the container", func(t *testing.T) {
		p := n.waitPod("liveness", "its container restarted", func(p *v1.Pod) bool {
			cs := containerOf(p, "app")
			return cs != nil && cs.RestartCount >= 1
		})
		if cs := containerOf(p, "app"); cs.LastTerminationState.Terminated == nil {
			t.Errorf("the restarted container has no last termination state: %s", describePod(p))
		}
	})

	t.Run("readiness follows the probe both ways", func(t *testing.T) {
		p := n.waitPod("readiness", "ready", runningAndReady)
		web := runtimeID(containerOf(p, "web"))
		n.exec(web, "rm", "/www/ready")
		n.waitPod("readiness", "not ready once /ready is gone", func(p *v1.Pod) bool {
			return p.Status.Phase == v1.PodRunning && hasCondition(p, v1.PodReady, v1.ConditionFalse) &&
				hasCondition(p, v1.ContainersReady, v1.ConditionFalse)
		})
		n.exec(web, "touch", "/www/ready")
		p = n.waitPod("readiness", "ready again", runningAndReady)
		if cs := containerOf(p, "web"); cs.RestartCount != 0 || runtimeID(cs) != web {
			t.Errorf("a readiness probe restarted the container: %s", describePod(p))
		}
	})

	t.Run("a startup probe holds the liveness probe back", func(t *testing.T) {
		// The liveness probe fails until /tmp/up exists, with a threshold
		// of 1: had it run before the startup probe passed, the container
		// would have restarted.
		p := n.waitPod("startup", "started and ready", func(p *v1.Pod) bool {
			cs := containerOf(p, "slow")
			return runningAndReady(p) && cs != nil && cs.Started != nil && *cs.Started
		})
		time.Sleep(settleTime) // liveness now runs, and passes
		p = n.waitPod("startup", "still ready", runningAndReady)
		if cs := containerOf(p, "slow"); cs.RestartCount != 0 {
			t.Errorf("the container restarted: %s", describePod(p))
		}
	})
}
