//go:build e2e

package nodee2e

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/internal/devnode"
)

const (
	// waitTimeout bounds every wait for the node: reaching it is a failure,
	// not a timing assertion, so it is generous for a loaded 2-core VM.
	waitTimeout = 2 * time.Minute
	// pollInterval is how often a wait looks again.
	pollInterval = 250 * time.Millisecond
	// criTimeout bounds one CRI call of the test.
	criTimeout = 30 * time.Second
)

// eventually polls cond until it holds; after waitTimeout the test fails
// with what was awaited and cond's last description of what it saw.
func (n *testNode) eventually(what string, cond func() (ok bool, seen string)) {
	n.t.Helper()
	deadline := time.Now().Add(waitTimeout)
	for {
		ok, seen := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("after %v still waiting for %s; last seen: %s", waitTimeout, what, seen)
		}
		time.Sleep(pollInterval)
	}
}

// writeManifest writes a static pod manifest into the node's manifest
// directory, atomically; IMAGE in it names the node's busybox image.
func (n *testNode) writeManifest(file, manifest string) {
	n.t.Helper()
	writeFileAtomic(n.t, filepath.Join(n.manifestDir, file), withImage(manifest))
}

func (n *testNode) removeManifest(file string) {
	n.t.Helper()
	if err := os.Remove(filepath.Join(n.manifestDir, file)); err != nil {
		n.t.Fatal(err)
	}
}

func withImage(manifest string) string {
	return strings.ReplaceAll(manifest, "IMAGE", devnode.DefaultTestImage)
}

// pods is the node's /pods: every desired pod with its status.
func (n *testNode) pods() ([]v1.Pod, error) {
	resp, err := httpClient.Get("http://" + n.readOnlyAddr + "/pods")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET /pods: %s", resp.Status)
	}
	var list v1.PodList
	if err := json.NewDecoder(resp.Body).Decode(&list); err != nil {
		return nil, fmt.Errorf("GET /pods: %w", err)
	}
	return list.Items, nil
}

// pod finds a pod on /pods by the name its manifest gives it (a static
// pod runs as <name>-<node>).
func (n *testNode) pod(name string) (*v1.Pod, error) {
	pods, err := n.pods()
	if err != nil {
		return nil, err
	}
	for i := range pods {
		if pods[i].Name == name+"-"+nodeName {
			return &pods[i], nil
		}
	}
	return nil, nil
}

// waitPod waits until the named pod is on /pods and cond holds for it.
func (n *testNode) waitPod(name, what string, cond func(*v1.Pod) bool) *v1.Pod {
	n.t.Helper()
	var found *v1.Pod
	n.eventually(fmt.Sprintf("pod %s: %s", name, what), func() (bool, string) {
		p, err := n.pod(name)
		if err != nil || p == nil {
			return false, fmt.Sprintf("not on /pods (%v)", err)
		}
		found = p
		return cond(p), describePod(p)
	})
	return found
}

// waitPodGone waits until /pods no longer lists the named pod.
func (n *testNode) waitPodGone(name string) {
	n.t.Helper()
	n.eventually("pod "+name+" leaves /pods", func() (bool, string) {
		p, err := n.pod(name)
		if err != nil {
			return false, err.Error()
		}
		if p != nil {
			return false, describePod(p)
		}
		return true, ""
	})
}

// push sends a request to the node's push endpoint (a unix socket) and
// returns the status code and body.
func (n *testNode) push(method, path, body string) (int, string) {
	n.t.Helper()
	client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return (&net.Dialer{}).DialContext(ctx, "unix", n.pushSocket)
		},
	}}
	req, err := http.NewRequest(method, "http://localhost"+path, strings.NewReader(withImage(body)))
	if err != nil {
		n.t.Fatal(err)
	}
	resp, err := client.Do(req)
	if err != nil {
		n.t.Fatalf("%s %s on the push socket: %v", method, path, err)
	}
	defer resp.Body.Close()
	answer, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(answer)
}

// Conditions on a pod's API status.

func runningAndReady(p *v1.Pod) bool {
	return p.Status.Phase == v1.PodRunning && hasCondition(p, v1.PodReady, v1.ConditionTrue)
}

func hasCondition(p *v1.Pod, typ v1.PodConditionType, status v1.ConditionStatus) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == typ {
			return c.Status == status
		}
	}
	return false
}

func phaseIs(phase v1.PodPhase) func(*v1.Pod) bool {
	return func(p *v1.Pod) bool { return p.Status.Phase == phase }
}

// containerOf is the status of the named container, init containers
// included; nil when the status has none yet.
func containerOf(p *v1.Pod, name string) *v1.ContainerStatus {
	for _, list := range [][]v1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for i := range list {
			if list[i].Name == name {
				return &list[i]
			}
		}
	}
	return nil
}

// runtimeID is a container status' runtime ID without the runtime's scheme.
func runtimeID(cs *v1.ContainerStatus) string {
	_, id, _ := strings.Cut(cs.ContainerID, "://")
	return id
}

// describePod is a one-line summary of a pod's status for failure messages.
func describePod(p *v1.Pod) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s uid %s phase %s", p.Name, p.UID, p.Status.Phase)
	if p.Status.Reason != "" {
		fmt.Fprintf(&b, " (%s: %s)", p.Status.Reason, p.Status.Message)
	}
	for _, c := range p.Status.Conditions {
		fmt.Fprintf(&b, " %s=%s", c.Type, c.Status)
	}
	for _, list := range [][]v1.ContainerStatus{p.Status.InitContainerStatuses, p.Status.ContainerStatuses} {
		for _, c := range list {
			fmt.Fprintf(&b, " [%s restarts=%d ready=%t", c.Name, c.RestartCount, c.Ready)
			switch s := c.State; {
			case s.Running != nil:
				b.WriteString(" running")
			case s.Waiting != nil:
				fmt.Fprintf(&b, " waiting %s: %s", s.Waiting.Reason, s.Waiting.Message)
			case s.Terminated != nil:
				fmt.Fprintf(&b, " terminated %d %s", s.Terminated.ExitCode, s.Terminated.Reason)
			}
			b.WriteString("]")
		}
	}
	return b.String()
}

// settleTime lets a restarted core or runtime go through several syncs,
// relists and housekeeping passes, in which it must not touch running
// containers.
const settleTime = 5 * time.Second

// runningPods writes count sleeper manifests (name0, name1, ...) and
// returns each pod, running and ready, by name.
func (n *testNode) runningPods(name string, count int) map[string]*v1.Pod {
	n.t.Helper()
	pods := map[string]*v1.Pod{}
	for i := range count {
		pods[fmt.Sprintf("%s%d", name, i)] = nil
		n.writeManifest(fmt.Sprintf("%s%d.yaml", name, i), sleeper(fmt.Sprintf("%s%d", name, i)))
	}
	for name := range pods {
		pods[name] = n.waitPod(name, "running and ready", runningAndReady)
	}
	return pods
}

// expectUntouched checks that each pod runs, ready, on the container it
// ran on before: same UID and container ID, no restart, and a single
// instance of the container and of the sandbox on the runtime.
func (n *testNode) expectUntouched(before map[string]*v1.Pod) {
	n.t.Helper()
	for name, old := range before {
		now := n.waitPod(name, "running and ready", runningAndReady)
		was, is := containerOf(old, "app"), containerOf(now, "app")
		if now.UID != old.UID || is == nil || is.ContainerID != was.ContainerID || is.RestartCount != 0 {
			n.t.Errorf("pod %s changed: before %s; now %s", name, describePod(old), describePod(now))
		}
		if cs, sbs := n.runtimeContainers(old.UID), n.runtimeSandboxes(old.UID); len(cs) != 1 || len(sbs) != 1 ||
			cs[0].State != runtimeapi.ContainerState_CONTAINER_RUNNING || sbs[0].State != runtimeapi.PodSandboxState_SANDBOX_READY {
			n.t.Errorf("pod %s has %d container and %d sandbox instances on the runtime (want 1 running, 1 ready): %v %v", name, len(cs), len(sbs), cs, sbs)
		}
	}
}
