//go:build e2e

package nodee2e

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestCoreKilledAndRestartedKeepsPods(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	pods := n.runningPods("p", 10)

	// The pod whose manifest goes while the core is down is an orphan when
	// it comes back: it is stopped.
	orphan := pods["p9"]
	delete(pods, "p9")
	n.killCore()
	n.removeManifest("p9.yaml")
	n.startCore("")

	n.expectUntouched(pods)
	n.waitRuntimeStopped(orphan.UID)
	if p, err := n.pod("p9"); err != nil || p != nil {
		t.Errorf("/pods lists the removed pod p9 (%v): %v", err, p)
	}
	time.Sleep(settleTime)
	n.expectUntouched(pods)
}

func TestRuntimeRestartedUnderTheCore(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	pods := n.runningPods("p", 3)

	ctx, cancel := context.WithTimeout(context.Background(), waitTimeout)
	defer cancel()
	if err := n.dev.Restart(ctx); err != nil {
		t.Fatalf("restarting containerd: %v", err)
	}
	n.eventually("the core is healthy again", func() (bool, string) {
		code, body := n.healthz("?verbose")
		return code == 200, body
	})
	n.expectUntouched(pods)
	time.Sleep(settleTime)
	n.expectUntouched(pods)
	// The core's connection to the runtime works again: a new pod runs.
	n.writeManifest("after.yaml", sleeper("after"))
	n.waitPod("after", "running and ready", runningAndReady)
}

// A restarted core whose cgroup plugin cannot start cannot admit the pods
// it finds: they wait for admission, and keep running meanwhile, until the
// plugin serves again.
func TestCoreRestartedWhileItsCgroupPluginCannotStart(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	pods := n.runningPods("p", 2)

	n.killCore()
	cgroup := slices.IndexFunc(n.plugins, func(p plugin) bool { return p.kind == "cgroup" })
	n.plugins[cgroup].sha256 = strings.Repeat("0", 64) // no binary has this digest
	n.writeConfig()
	n.startCore("syncloop")
	for name := range pods {
		n.expectLog(name+" waits for admission", "pod waits for admission", "pod=default/"+name+"-"+nodeName, "admitter=cgroup")
	}
	time.Sleep(settleTime) // housekeeping passes, which must not take the pods for orphans
	for name, p := range pods {
		if st := n.runtimeStatus(p.UID, "app"); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING || st.Id != runtimeID(containerOf(p, "app")) {
			t.Errorf("pod %s's container %s is %s while the pod waits for admission, want %s running", name, st.Id, st.State, runtimeID(containerOf(p, "app")))
		}
	}

	n.plugins[cgroup].sha256 = ""
	n.writeConfig() // the core reloads it
	n.expectUntouched(pods)
}
