//go:build e2e

package nodee2e

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// exiting is a pod whose container exits with code after a second.
func exiting(name string, policy v1.RestartPolicy, code int) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %s
spec:
  restartPolicy: %s
  containers:
  - name: app
    image: IMAGE
    command: ["sh", "-c", "sleep 1; exit %d"]
`, name, policy, code)
}

func TestRestartPolicies(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	finishing := []struct {
		name   string
		policy v1.RestartPolicy
		code   int
		phase  v1.PodPhase
	}{
		{"never-ok", v1.RestartPolicyNever, 0, v1.PodSucceeded},
		{"never-fail", v1.RestartPolicyNever, 1, v1.PodFailed},
		{"onfailure-ok", v1.RestartPolicyOnFailure, 0, v1.PodSucceeded},
	}
	crashing := []struct {
		name   string
		policy v1.RestartPolicy
		code   int
	}{
		{"always-ok", v1.RestartPolicyAlways, 0},
		{"always-fail", v1.RestartPolicyAlways, 1},
		{"onfailure-fail", v1.RestartPolicyOnFailure, 1},
	}
	for _, c := range finishing {
		n.writeManifest(c.name+".yaml", exiting(c.name, c.policy, c.code))
	}
	for _, c := range crashing {
		n.writeManifest(c.name+".yaml", exiting(c.name, c.policy, c.code))
	}

	for _, c := range finishing {
		p := n.waitPod(c.name, "phase "+string(c.phase), phaseIs(c.phase))
		cs := containerOf(p, "app")
		if cs == nil || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != int32(c.code) || cs.RestartCount != 0 {
			t.Errorf("%s (restartPolicy %s, exit %d): want the container terminated with %d and never restarted; got %s",
				c.name, c.policy, c.code, c.code, describePod(p))
			continue
		}
		if got := len(n.runtimeContainers(p.UID)); got != 1 {
			t.Errorf("%s: the runtime has %d instances of the container, want 1", c.name, got)
		}
	}

	// A container that keeps exiting is restarted with a growing backoff:
	// it waits in CrashLoopBackOff between restarts.
	for _, c := range crashing {
		backedOff := false
		p := n.waitPod(c.name, "CrashLoopBackOff and at least 2 restarts", func(p *v1.Pod) bool {
			cs := containerOf(p, "app")
			if cs == nil {
				return false
			}
			if w := cs.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
				backedOff = true
			}
			return backedOff && cs.RestartCount >= 2
		})
		if p.Status.Phase == v1.PodSucceeded || p.Status.Phase == v1.PodFailed {
			t.Errorf("%s (restartPolicy %s, exit %d) is %s, want a pod that keeps restarting", c.name, c.policy, c.code, p.Status.Phase)
		}
		// Stop it here rather than at the node's end, where a restart in
		// flight would race the runtime's teardown.
		n.removeManifest(c.name + ".yaml")
		n.waitPodGone(c.name)
		n.waitRuntimeStopped(p.UID)
	}
}
