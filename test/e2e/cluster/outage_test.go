//go:build e2e

package clustere2e

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/procfs"
	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"

	"github.com/microlet/microlet/internal/devcluster"
	"github.com/microlet/microlet/internal/devnode"
)

// outage is how long the API server stays down: the minute.
const outage = time.Minute

// maxOutageDials bounds the connections the node may open to the API
// server's port during the outage. What reconnects is a handful of
// informers backing off up to 30 s, the lease every 10 s (a few tries
// each) and the status every 10 s: a few dozen a minute. A busy loop
// dials thousands.
const maxOutageDials = 300

// maxOutageLogLines bounds what the node logs during the outage: the one
// warning of the outage, and the odd line of a part that does not talk to
// the API server; a line per retry would be hundreds.
const maxOutageLogLines = 30

// TestAPIServerOutage: the API server stopped for a minute under running
// pods. Nothing restarts (the same containers, restartCount 0), the node
// neither busy-loops (connections to the API server's port, log lines,
// CPU) nor logs more than one warning for the outage, and what
// happened meanwhile reaches the API once it is back: a container that
// exited during the outage (its pod Failed with the exit code), one that
// was restarted (its restart count and its second Started event), a
// fresh heartbeat on a Node that stayed Ready and a renewed Lease.
//
// The test has a control plane of its own: stopping the package's API
// server would fail the tests running beside it. It runs no controllers
// (its pods name their node), so that the only client dialling the API
// server's port during the outage is the node.
func TestAPIServerOutage(t *testing.T) {
	t.Parallel()
	cluster(t) // the package's prerequisites; its control plane is not used
	c := devcluster.StartT(t)
	ctx := context.Background()
	// Without the controller-manager nobody makes the default service
	// account pods are admitted with.
	if _, err := c.Admin.CoreV1().ServiceAccounts("default").Create(ctx,
		&v1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	n := startNode(t, nodeOptions{Cluster: c})
	waitReady(t, n, "")

	// The pods wait for files the test writes while the API server is down.
	ctl := t.TempDir()
	pods := c.Admin.CoreV1().Pods("default")
	create := func(name string, policy v1.RestartPolicy, script string) *v1.Pod {
		spec := apiPodSpec(n, v1.Container{Name: "app", Image: devnode.DefaultTestImage, Command: []string{"sh", "-c", script},
			VolumeMounts: []v1.VolumeMount{{Name: "ctl", MountPath: "/ctl"}}},
			v1.Volume{Name: "ctl", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: ctl}}})
		spec.NodeName, spec.NodeSelector, spec.RestartPolicy = n.Name, nil, policy
		p, err := pods.Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: spec}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	waitFor := `until [ -e /ctl/go ]; do sleep 0.2; done`
	create("steady", v1.RestartPolicyAlways, untilTerm)
	create("exits", v1.RestartPolicyNever, waitFor+"; exit 3")
	create("restarts", v1.RestartPolicyAlways, `[ -e /ctl/restarted ] && exec sleep 100000; `+waitFor+"; touch /ctl/restarted; exit 1")
	running := map[string]*v1.Pod{}
	for _, name := range []string{"steady", "exits", "restarts"} {
		running[name] = waitAPIPod(t, n, "default", name, "Running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	}
	steadyBefore := n.Containers(running["steady"].UID)
	readyBefore := readyCondition(apiNode(t, n))
	leaseBefore, err := c.Admin.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(ctx, n.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	// The outage, with the node's attempts to reach the API server
	// counted.
	logBefore := len(n.Log())
	cpuBefore := agentCPU(t, n)
	if err := c.StopAPIServer(); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	dials := countDials(t, strings.TrimPrefix(c.URL, "https://"))
	writeFile(t, filepath.Join(ctl, "go"), "")
	n.Eventually("the pod 'exits' exited and 'restarts' restarted, on the runtime", func() (bool, string) {
		exits, restarts := n.Containers(running["exits"].UID), n.Containers(running["restarts"].UID)
		exited := len(exits) == 1 && exits[0].State == runtimeapi.ContainerState_CONTAINER_EXITED
		return exited && len(restarts) == 2, fmt.Sprintf("exits %v, restarts %v", exits, restarts)
	})
	time.Sleep(time.Until(stopped.Add(outage)))
	dialled := dials()
	cpu := agentCPU(t, n) - cpuBefore
	during := n.Log()[logBefore:]
	if err := c.StartAPIServer(ctx); err != nil {
		t.Fatal(err)
	}
	t.Logf("during the %v outage: %d connections to the API server's port, %d log lines, %.2f s of CPU (core and plugins)",
		outage, dialled, strings.Count(during, "\n"), cpu.Seconds())

	if dialled == 0 || dialled > maxOutageDials {
		t.Errorf("the node dialled the API server's port %d times during the outage, want 1 to %d", dialled, maxOutageDials)
	}
	if lines := strings.Count(during, "\n"); lines > maxOutageLogLines {
		t.Errorf("%d log lines during the outage, want at most %d:\n%s", lines, maxOutageLogLines, during)
	}
	if warnings := outageWarning.FindAllString(during, -1); len(warnings) != 1 {
		t.Errorf("%d warnings that the API server cannot be reached during one outage, want 1:\n%s", len(warnings), during)
	}

	// Back: everything catches up.
	exited := waitAPIPod(t, n, "default", "exits", "Failed with exit code 3", func(p *v1.Pod) bool {
		s := p.Status.ContainerStatuses
		return p.Status.Phase == v1.PodFailed && len(s) == 1 && s[0].State.Terminated != nil && s[0].State.Terminated.ExitCode == 3
	})
	if id := exited.Status.ContainerStatuses[0].ContainerID; id != running["exits"].Status.ContainerStatuses[0].ContainerID {
		t.Errorf("the pod that exited shows container %s, want the one it ran (%s)", id, running["exits"].Status.ContainerStatuses[0].ContainerID)
	}
	waitAPIPod(t, n, "default", "restarts", "Running after 1 restart with exit code 1", func(p *v1.Pod) bool {
		s := p.Status.ContainerStatuses
		return p.Status.Phase == v1.PodRunning && len(s) == 1 && s[0].RestartCount == 1 && s[0].State.Running != nil &&
			s[0].LastTerminationState.Terminated != nil && s[0].LastTerminationState.Terminated.ExitCode == 1
	})
	n.Eventually("the restarted container's second Started event", func() (bool, string) {
		list, err := c.Admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{
			FieldSelector: "involvedObject.kind=Pod,involvedObject.name=restarts,reason=Started"})
		if err != nil {
			return false, err.Error()
		}
		started := int32(0)
		for _, e := range list.Items {
			started += max(e.Count, 1)
		}
		return started >= 2, fmt.Sprintf("%d Started", started)
	})
	if ready := readyCondition(apiNode(t, n)); ready.Status != v1.ConditionTrue || !ready.LastTransitionTime.Equal(&readyBefore.LastTransitionTime) {
		t.Errorf("Ready after the outage %+v, before %+v: want True since before", ready, readyBefore)
	}
	n.Eventually("the Lease renewed after the outage", func() (bool, string) {
		l, err := c.Admin.CoordinationV1().Leases(v1.NamespaceNodeLease).Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return l.Spec.RenewTime.After(stopped.Add(outage)) && l.UID == leaseBefore.UID, l.Spec.RenewTime.String()
	})

	steady, err := pods.Get(ctx, "steady", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	after := n.Containers(steady.UID)
	if steady.Status.Phase != v1.PodRunning || steady.Status.ContainerStatuses[0].RestartCount != 0 ||
		len(after) != 1 || len(steadyBefore) != 1 || after[0].Id != steadyBefore[0].Id {
		t.Errorf("the steady pod after the outage: %s, containers before %s after %s; want it Running in the same container",
			describe(steady, nil), containerIDs(steadyBefore), containerIDs(after))
	}
	// The crash-looping guard of the harness: nothing restarts at teardown.
	for _, name := range []string{"restarts", "steady"} {
		if err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: ptr.To[int64](0)}); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	}
}

// outageWarning is the node's warning that it lost the API server
// (core/cluster/apiclient.Outages), with the part that noticed first.
var outageWarning = regexp.MustCompile(`the API server cannot be reached; retrying: while="([^"]+)"`)

// countDials counts the connections opened to the port of addr on
// loopback from now until the returned function is called: an iptables
// rule without a target counts the SYNs, and the kernel refuses them as a
// closed port does, so the node sees the outage as it is. The rule goes
// when t ends.
func countDials(t *testing.T, addr string) func() int64 {
	t.Helper()
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	tag := "microlet-e2e-dials-" + port
	rule := []string{"OUTPUT", "-o", "lo", "-p", "tcp", "--dport", port, "--syn", "-m", "comment", "--comment", tag}
	iptables := func(args ...string) string {
		out, err := exec.Command("iptables", append([]string{"-w"}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("iptables %s: %v: %s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	iptables(append([]string{"-I"}, rule...)...)
	t.Cleanup(func() { iptables(append([]string{"-D"}, rule...)...) })
	return func() int64 {
		for _, line := range strings.Split(iptables("-L", "OUTPUT", "-n", "-v", "-x"), "\n") {
			if strings.Contains(line, "/* "+tag+" */") {
				packets, err := strconv.ParseInt(strings.Fields(line)[0], 10, 64)
				if err != nil {
					t.Fatalf("iptables counter %q: %v", line, err)
				}
				return packets
			}
		}
		t.Fatalf("no iptables rule %s", tag)
		return 0
	}
}

// agentCPU is the CPU time the node's core and plugin processes have used.
func agentCPU(t *testing.T, n *clusterNode) time.Duration {
	t.Helper()
	var total float64
	pids := []int{n.CorePID()}
	for pid := range n.PluginProcesses() {
		pids = append(pids, pid)
	}
	for _, pid := range pids {
		p, err := procfs.NewProc(pid)
		if err != nil {
			t.Fatal(err)
		}
		stat, err := p.Stat()
		if err != nil {
			t.Fatal(err)
		}
		total += stat.CPUTime()
	}
	return time.Duration(total * float64(time.Second))
}
