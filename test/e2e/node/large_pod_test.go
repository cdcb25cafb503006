//go:build e2e

package nodee2e

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	statsapi "k8s.io/kubelet/pkg/apis/stats/v1alpha1"
)

// largePodContainers is how many containers TestLargePod's pod has:
// LARGE_POD_CONTAINERS, or 200. docs/performance.md has the figures of
// 1000.
func largePodContainers(t *testing.T) int {
	s := os.Getenv("LARGE_POD_CONTAINERS")
	if s == "" {
		return 200
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 {
		t.Fatalf("LARGE_POD_CONTAINERS=%q: want a positive number", s)
	}
	return n
}

// largePod is a pod of count containers running sleep as PID 1, which
// ignores SIGTERM: each stop takes the pod's whole grace period, 2 s.
func largePod(name string, count int) string {
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: %s\nspec:\n  terminationGracePeriodSeconds: 2\n  containers:\n", name)
	for i := range count {
		fmt.Fprintf(&b, "  - name: c%d\n    image: IMAGE\n    command: [\"sleep\", \"3600\"]\n", i)
	}
	return b.String()
}

// A pod of hundreds of containers starts, showing its progress in its
// status, and its deletion converges: nothing of it runs on the runtime
// afterwards. Meanwhile another pod's stats keep answering on
// /stats/summary. The wait scales with the pod (the runtime starts a few
// containers a second here, fewer on a loaded machine); it is a bound for a
// hang, not a timing assertion.
func TestLargePod(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	count := largePodContainers(t)
	limit := waitTimeout + 3*time.Duration(count)*time.Second

	n.writeManifest("small.yaml", sleeper("small"))
	n.waitPod("small", "running and ready", runningAndReady)
	n.eventually("pod small in /stats/summary", func() (bool, string) {
		err := n.podStats("small-" + nodeName)
		return err == nil, fmt.Sprint(err)
	})
	stats := n.watchStats("small-" + nodeName)

	start := time.Now()
	n.writeManifest("large.yaml", largePod("large", count))
	var progress []int
	large := n.waitFor(limit, fmt.Sprintf("all %d containers of pod large running", count), func() (*v1.Pod, bool, string) {
		p, err := n.pod("large")
		if err != nil || p == nil {
			return nil, false, fmt.Sprintf("not on /pods (%v)", err)
		}
		running := 0
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil {
				running++
			}
		}
		if len(progress) == 0 || progress[len(progress)-1] != running {
			progress = append(progress, running)
		}
		return p, running == count && p.Status.Phase == v1.PodRunning, fmt.Sprintf("%d of %d running, phase %s", running, count, p.Status.Phase)
	})
	started := time.Since(start)
	// The status shows containers running while others still start: /pods
	// saw counts between none and all.
	if len(progress) < 3 {
		t.Errorf("running containers seen on /pods while the pod started: %v, want counts between 0 and %d", progress, count)
	}

	start = time.Now()
	n.removeManifest("large.yaml")
	n.waitFor(limit, "pod large stopped on the runtime", func() (*v1.Pod, bool, string) {
		live := n.liveOnRuntime(large.UID)
		return nil, live == 0, fmt.Sprintf("%d containers or sandboxes of it still run", live)
	})
	stopped := time.Since(start)
	n.waitFor(limit, "pod large leaves /pods", func() (*v1.Pod, bool, string) {
		p, err := n.pod("large")
		return nil, err == nil && p == nil, fmt.Sprintf("%v %v", err, p != nil)
	})
	answered, failures := stats.stop()
	t.Logf("%d containers: all running after %v (running counts seen: %v); stopped on the runtime %v after deletion; /stats/summary answered %d times",
		count, started.Round(time.Second), progress, stopped.Round(time.Second), answered)
	if len(failures) > 0 {
		t.Errorf("/stats/summary failed %d of %d times while the large pod started and stopped:\n%s", len(failures), answered+len(failures), strings.Join(failures, "\n"))
	}
}

// waitFor polls cond until it holds, for at most limit.
func (n *testNode) waitFor(limit time.Duration, what string, cond func() (*v1.Pod, bool, string)) *v1.Pod {
	n.t.Helper()
	deadline := time.Now().Add(limit)
	for {
		p, ok, seen := cond()
		if ok {
			return p
		}
		if time.Now().After(deadline) {
			n.t.Fatalf("after %v still waiting for %s; last seen: %s", limit, what, seen)
		}
		time.Sleep(time.Second)
	}
}

// liveOnRuntime counts the pod's running containers and ready sandboxes.
func (n *testNode) liveOnRuntime(uid types.UID) int {
	live := 0
	for _, c := range n.runtimeContainers(uid) {
		if c.State == runtimeapi.ContainerState_CONTAINER_RUNNING {
			live++
		}
	}
	for _, s := range n.runtimeSandboxes(uid) {
		if s.State == runtimeapi.PodSandboxState_SANDBOX_READY {
			live++
		}
	}
	return live
}

// statsWatch asks /stats/summary every 2 s for a pod's stats.
type statsWatch struct {
	done     chan struct{}
	wg       sync.WaitGroup
	mu       sync.Mutex
	answered int
	failures []string
}

// watchStats asks /stats/summary for pod's stats until stop.
func (n *testNode) watchStats(pod string) *statsWatch {
	w := &statsWatch{done: make(chan struct{})}
	w.wg.Add(1)
	go func() {
		defer w.wg.Done()
		tick := time.NewTicker(2 * time.Second)
		defer tick.Stop()
		for {
			err := n.podStats(pod)
			w.mu.Lock()
			if err != nil {
				w.failures = append(w.failures, fmt.Sprintf("%s: %v", time.Now().Format(time.TimeOnly), err))
			} else {
				w.answered++
			}
			w.mu.Unlock()
			select {
			case <-w.done:
				return
			case <-tick.C:
			}
		}
	}()
	n.t.Cleanup(func() { w.stop() })
	return w
}

// stop ends the watch; it says how often the summary answered with the
// pod's stats and how it failed otherwise.
func (w *statsWatch) stop() (int, []string) {
	select {
	case <-w.done:
	default:
		close(w.done)
	}
	w.wg.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.answered, w.failures
}

// podStats GETs /stats/summary and checks that it has the pod.
func (n *testNode) podStats(pod string) error {
	resp, err := httpClient.Get("http://" + n.readOnlyAddr + "/stats/summary")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("%s: %s", resp.Status, strings.TrimSpace(string(body)))
	}
	var summary statsapi.Summary
	if err := json.Unmarshal(body, &summary); err != nil {
		return err
	}
	for _, p := range summary.Pods {
		if p.PodRef.Name == pod {
			return nil
		}
	}
	return fmt.Errorf("no stats of pod %s", pod)
}
