//go:build e2e

package clustere2e

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	goruntime "runtime"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	pressuree2e "github.com/microlet/microlet/test/e2e/pressure"
)

// TestNodeRegistersReady: a node registers as the kubelet does and turns
// Ready (kubectl get nodes shows it with its labels, taints, addresses,
// capacity and nodeInfo), renews its Lease, stays Ready through a restart,
// and registers again when its Node is deleted.
func TestNodeRegistersReady(t *testing.T) {
	t.Parallel()
	c := cluster(t)
	n := startNode(t, nodeOptions{Settings: map[string]string{
		"node_labels":          `{ "node.kubernetes.io/pool" = "e2e" }`,
		"register_with_taints": `["dedicated=e2e:NoSchedule"]`,
	}})
	waitReady(t, n, "")

	if out := kubectl(t, "get", "nodes", n.Name, "--no-headers"); !regexp.MustCompile(`^` + n.Name + `\s+Ready\s`).MatchString(out) {
		t.Errorf("kubectl get nodes: %q, want %s Ready", out, n.Name)
	}
	node := kubectlNode(t, n.Name)
	for label, want := range map[string]string{
		v1.LabelHostname: n.Name, v1.LabelOSStable: goruntime.GOOS, v1.LabelArchStable: goruntime.GOARCH,
		"beta.kubernetes.io/os": goruntime.GOOS, "beta.kubernetes.io/arch": goruntime.GOARCH,
		"node.kubernetes.io/pool": "e2e",
	} {
		if got := node.Labels[label]; got != want {
			t.Errorf("label %s = %q, want %q", label, got, want)
		}
	}
	if !hasTaint(node, v1.Taint{Key: "dedicated", Value: "e2e", Effect: v1.TaintEffectNoSchedule}) {
		t.Errorf("taints %v, want dedicated=e2e:NoSchedule", node.Spec.Taints)
	}
	addresses := map[v1.NodeAddressType]string{}
	for _, a := range node.Status.Addresses {
		addresses[a.Type] = a.Address
	}
	if addresses[v1.NodeInternalIP] == "" || addresses[v1.NodeHostName] != n.Name {
		t.Errorf("addresses %v, want an InternalIP and Hostname %s", node.Status.Addresses, n.Name)
	}
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage, v1.ResourcePods} {
		capacity, alloc := node.Status.Capacity[name], node.Status.Allocatable[name]
		if capacity.Sign() <= 0 || alloc.Sign() <= 0 || alloc.Cmp(capacity) > 0 {
			t.Errorf("%s: capacity %s allocatable %s, want 0 < allocatable <= capacity", name, capacity.String(), alloc.String())
		}
	}
	info := node.Status.NodeInfo
	if info.MachineID == "" || info.BootID == "" || info.KernelVersion == "" || info.OSImage == "" ||
		!strings.HasPrefix(info.ContainerRuntimeVersion, "containerd://") || !strings.HasPrefix(info.KubeletVersion, "v1.") ||
		info.OperatingSystem != goruntime.GOOS || info.Architecture != goruntime.GOARCH {
		t.Errorf("nodeInfo %+v", info)
	}
	if port := node.Status.DaemonEndpoints.KubeletEndpoint.Port; fmt.Sprint(port) != strings.TrimPrefix(n.Secure, "https://127.0.0.1:") {
		t.Errorf("daemonEndpoints port %d, want the node API's (%s)", port, n.Secure)
	}
	if len(node.Status.Images) == 0 {
		t.Errorf("no images on the Node")
	}

	ctx, cancel := context.WithTimeout(context.Background(), pressuree2e.WaitTimeout)
	defer cancel()
	leases := c.Admin.CoordinationV1().Leases(v1.NamespaceNodeLease)
	var first *coordinationv1.Lease
	n.Eventually("the node's Lease, owned by its Node", func() (bool, string) {
		l, err := leases.Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		first = l
		owned := len(l.OwnerReferences) == 1 && l.OwnerReferences[0].Kind == "Node" && l.OwnerReferences[0].UID == node.UID
		return owned && l.Spec.RenewTime != nil && *l.Spec.LeaseDurationSeconds == 40, fmt.Sprintf("%+v %+v", l.OwnerReferences, l.Spec)
	})
	n.Eventually("the Lease renewed", func() (bool, string) {
		l, err := leases.Get(ctx, n.Name, metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return l.Spec.RenewTime.After(first.Spec.RenewTime.Time), l.Spec.RenewTime.String()
	})

	// A restart: the Node stays Ready (the same transition time) and
	// gets a fresh heartbeat once the node's checks pass.
	// (The API keeps whole seconds: the restart may post within the
	// second it began, but seconds after the last post before it.)
	before := readyCondition(apiNode(t, n))
	n.RestartCore()
	n.Eventually("a heartbeat after the restart", func() (bool, string) {
		c := readyCondition(apiNode(t, n))
		return c.LastHeartbeatTime.After(before.LastHeartbeatTime.Time), fmt.Sprintf("%+v", c)
	})
	if after := readyCondition(apiNode(t, n)); after.Status != v1.ConditionTrue || !after.LastTransitionTime.Equal(&before.LastTransitionTime) {
		t.Errorf("Ready after a restart %+v, before %+v: want True since before", after, before)
	}

	kubectl(t, "delete", "node", n.Name)
	again := waitReady(t, n, node.UID)
	if again.Labels["node.kubernetes.io/pool"] != "e2e" || !hasTaint(again, v1.Taint{Key: "dedicated", Value: "e2e", Effect: v1.TaintEffectNoSchedule}) {
		t.Errorf("re-registered Node: labels %v taints %v", again.Labels, again.Spec.Taints)
	}
}

// TestNodeNotReadyWhileStopped: microlet stopped, the node lifecycle
// controller marks the node NotReady (Ready Unknown) once the Lease
// expires; microlet back, the node is Ready again and its pod's container
// was not restarted.
func TestNodeNotReadyWhileStopped(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	n.Push(pressuree2e.PodSpec{Name: "steady", Script: pressuree2e.WaitForTermination}.Manifest())
	pod := n.WaitPod("steady", "running", func(p *v1.Pod) bool { return p.Status.Phase == v1.PodRunning })
	before := n.Containers(pod.UID)
	waitReady(t, n, "")

	n.StopCore()
	n.Eventually("the node lifecycle controller marks the node NotReady", func() (bool, string) {
		c := readyCondition(apiNode(t, n))
		return c.Status == v1.ConditionUnknown && c.Reason == "NodeStatusUnknown", fmt.Sprintf("%+v", c)
	})
	n.StartCore()
	waitReady(t, n, "")

	after := n.Containers(pod.UID)
	if len(after) != 1 || len(before) != 1 || after[0].Id != before[0].Id {
		t.Errorf("containers before %s, after %s: want the same one container", containerIDs(before), containerIDs(after))
	}
}

// startReadyNode starts a node with the default options and waits until
// its Node is Ready.
func startReadyNode(t *testing.T) *clusterNode {
	t.Helper()
	n := startNode(t, nodeOptions{})
	waitReady(t, n, "")
	return n
}

// waitReady waits until the node's Node in its cluster is Ready; with a
// uid, a Node other than that one.
func waitReady(t *testing.T, n *clusterNode, notUID types.UID) *v1.Node {
	t.Helper()
	var node *v1.Node
	eventually(t, "the node Ready", func() (bool, string) {
		var err error
		if node, err = n.Cluster.Admin.CoreV1().Nodes().Get(context.Background(), n.Name, metav1.GetOptions{}); err != nil {
			return false, err.Error()
		}
		c := readyCondition(node)
		return c.Status == v1.ConditionTrue && node.UID != notUID, fmt.Sprintf("uid %s, Ready %+v", node.UID, c)
	})
	return node
}

// apiNode is n's Node as its cluster's API server has it, for polling
// (kubectl is a process per call).
func apiNode(t *testing.T, n *clusterNode) *v1.Node {
	t.Helper()
	node, err := n.Cluster.Admin.CoreV1().Nodes().Get(context.Background(), n.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatalf("get node %s: %v", n.Name, err)
	}
	return node
}

// kubectlNode is the Node as kubectl gets it.
func kubectlNode(t *testing.T, name string) *v1.Node {
	t.Helper()
	var node v1.Node
	if err := json.Unmarshal([]byte(kubectl(t, "get", "node", name, "-o", "json")), &node); err != nil {
		t.Fatalf("kubectl get node -o json: %v", err)
	}
	return &node
}

func readyCondition(node *v1.Node) v1.NodeCondition {
	for _, c := range node.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c
		}
	}
	return v1.NodeCondition{}
}

func hasTaint(node *v1.Node, want v1.Taint) bool {
	for _, taint := range node.Spec.Taints {
		if taint.MatchTaint(&want) && taint.Value == want.Value {
			return true
		}
	}
	return false
}

func containerIDs(cs []*runtimeapi.Container) string {
	ids := make([]string, len(cs))
	for i, c := range cs {
		ids[i] = c.Id
	}
	return fmt.Sprint(ids)
}

// TestNodeNotReadyWithoutNetwork: the pod network's config gone, the node
// is NotReady with the kubelet's reason and a message naming it; back, the
// node is Ready again.
func TestNodeNotReadyWithoutNetwork(t *testing.T) {
	t.Parallel()
	n := startReadyNode(t)
	conf, off := n.Dev.CNIConfDir, n.Dev.CNIConfDir+".off"
	if err := os.Rename(conf, off); err != nil {
		t.Fatal(err)
	}
	restore := func() {
		if err := os.Rename(off, conf); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Error(err)
		}
	}
	t.Cleanup(restore)
	n.Eventually("NotReady for the network", func() (bool, string) {
		c := readyCondition(apiNode(t, n))
		return c.Status == v1.ConditionFalse && c.Reason == "KubeletNotReady" && strings.Contains(c.Message, "CNI"), fmt.Sprintf("%+v", c)
	})
	restore()
	waitReady(t, n, "")
}

// TestNodeReportsMemoryPressure: the eviction manager's pressure shows on
// the Node with the kubelet's reason and message, and the node lifecycle
// controller taints the node for it, as for a kubelet.
func TestNodeReportsMemoryPressure(t *testing.T) {
	t.Parallel()
	plugins := pressuree2e.DefaultPlugins()
	for i, p := range plugins {
		if p.Kind == "eviction" {
			// More than any test machine has: pressure from the first cycle.
			plugins[i].Body = `hard = ["memory.available<1000Gi"]`
		}
	}
	n := startNode(t, nodeOptions{Plugins: plugins})
	// Registered first: apiNode fails the test on a Node not there yet
	// (memory pressure does not keep a node from Ready).
	waitReady(t, n, "")
	n.Eventually("MemoryPressure on the Node, tainted for it", func() (bool, string) {
		node := apiNode(t, n)
		var pressure v1.NodeCondition
		for _, c := range node.Status.Conditions {
			if c.Type == v1.NodeMemoryPressure {
				pressure = c
			}
		}
		tainted := hasTaint(node, v1.Taint{Key: v1.TaintNodeMemoryPressure, Effect: v1.TaintEffectNoSchedule})
		return pressure.Status == v1.ConditionTrue && pressure.Reason == "KubeletHasInsufficientMemory" &&
				pressure.Message == "kubelet has insufficient memory available" && tainted,
			fmt.Sprintf("%+v, taints %v", pressure, node.Spec.Taints)
	})
	if c := readyCondition(apiNode(t, n)); c.Status != v1.ConditionTrue {
		t.Errorf("Ready %+v under memory pressure, want True as the kubelet", c)
	}
}
