//go:build e2e

package nodee2e

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// Probes of the kinds docs/probes.md's manifests leave out: tcpSocket on a
// busybox nc server, and grpc on the test image's gRPC health server
// (/bin/grpchealth, NOT_SERVING while /tmp/unhealthy exists).
const (
	readinessTCP = `apiVersion: v1
kind: Pod
metadata:
  name: tcp
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: server
    image: IMAGE
    command: ["sh", "-c", "nc -ll -p 8081 -e true & echo $! >/tmp/nc.pid; sleep 3600"]
    readinessProbe:
      tcpSocket: {port: 8081}
      periodSeconds: 1
`
	readinessGRPC = `apiVersion: v1
kind: Pod
metadata:
  name: grpc
spec:
  terminationGracePeriodSeconds: 1
  containers:
  - name: server
    image: IMAGE
    command: ["grpchealth", "-addr", ":9090"]
    readinessProbe:
      grpc: {port: 9090}
      periodSeconds: 1
`
)

// TestTCPAndGRPCProbes: readiness follows a tcp and a grpc probe both ways,
// and /metrics/probes counts every attempt by upstream's labels, until the
// pod is gone.
func TestTCPAndGRPCProbes(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	n.writeManifest("tcp.yaml", readinessTCP)
	n.writeManifest("grpc.yaml", readinessGRPC)

	t.Run("tcp", func(t *testing.T) {
		p := n.waitPod("tcp", "ready", runningAndReady)
		server := runtimeID(containerOf(p, "server"))
		n.expectProbeAttempts(p, "server", "Readiness", "successful")
		n.exec(server, "sh", "-c", "kill $(cat /tmp/nc.pid)")
		n.waitPod("tcp", "not ready once nothing listens", notReady)
		n.expectProbeAttempts(p, "server", "Readiness", "failed")
	})

	t.Run("grpc", func(t *testing.T) {
		p := n.waitPod("grpc", "ready", runningAndReady)
		server := runtimeID(containerOf(p, "server"))
		n.expectProbeAttempts(p, "server", "Readiness", "successful")
		n.exec(server, "touch", "/tmp/unhealthy")
		n.waitPod("grpc", "not ready while NOT_SERVING", notReady)
		n.expectProbeAttempts(p, "server", "Readiness", "failed")
		n.exec(server, "rm", "/tmp/unhealthy")
		p = n.waitPod("grpc", "ready again", runningAndReady)
		if cs := containerOf(p, "server"); cs.RestartCount != 0 || runtimeID(cs) != server {
			t.Errorf("a readiness probe restarted the container: %s", describePod(p))
		}
	})

	t.Run("a removed pod's series go", func(t *testing.T) {
		p := n.waitPod("grpc", "listed", func(*v1.Pod) bool { return true })
		n.removeManifest("grpc.yaml")
		n.waitPodGone("grpc")
		n.eventually("the removed pod's prober_probe_total series go", func() (bool, string) {
			got, ok := n.metricAt("/metrics/probes", "prober_probe_total", probeLabels(p, "server", "Readiness", "successful"))
			return !ok, fmt.Sprintf("still %v", got)
		})
	})
}

// notReady: the pod runs, its containers are not ready.
func notReady(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodRunning && hasCondition(p, v1.PodReady, v1.ConditionFalse) &&
		hasCondition(p, v1.ContainersReady, v1.ConditionFalse)
}

// expectProbeAttempts waits until /metrics/probes counts an attempt of the
// container's probe with the result.
func (n *testNode) expectProbeAttempts(p *v1.Pod, container, probeType, result string) {
	n.t.Helper()
	labels := probeLabels(p, container, probeType, result)
	n.eventually(fmt.Sprintf("prober_probe_total%v counts an attempt", labels), func() (bool, string) {
		got, ok := n.metricAt("/metrics/probes", "prober_probe_total", labels)
		return ok && got > 0, fmt.Sprintf("listed %t, value %v", ok, got)
	})
}

// probeLabels are upstream's labels of prober_probe_total.
func probeLabels(p *v1.Pod, container, probeType, result string) map[string]string {
	return map[string]string{"probe_type": probeType, "result": result, "container": container,
		"pod": p.Name, "namespace": p.Namespace, "pod_uid": string(p.UID)}
}
