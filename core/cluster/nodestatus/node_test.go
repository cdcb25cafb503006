package nodestatus

import (
	"errors"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 11, 26, 12, 0, 0, 0, time.UTC)

func quantities(kv ...any) v1.ResourceList {
	out := v1.ResourceList{}
	for i := 0; i < len(kv); i += 2 {
		out[v1.ResourceName(kv[i].(string))] = resource.MustParse(kv[i+1].(string))
	}
	return out
}

// readyFacts are a healthy node's facts.
func readyFacts() Facts {
	return Facts{
		Hostname:                "node-a",
		NodeIPs:                 []string{"10.0.0.5"},
		Capacity:                quantities("cpu", "2", "memory", "4Gi", "ephemeral-storage", "20Gi", "pods", "110", "hugepages-2Mi", "0"),
		Allocatable:             quantities("cpu", "1900m", "memory", "3Gi", "ephemeral-storage", "18Gi", "pods", "110", "hugepages-2Mi", "0"),
		DeviceCapacity:          quantities("vendor.example/gpu", "2"),
		DeviceAllocatable:       quantities("vendor.example/gpu", "1"),
		MachineID:               "m1",
		SystemUUID:              "u1",
		BootID:                  "b1",
		KernelVersion:           "6.1.0",
		OSImage:                 "Debian GNU/Linux 12 (bookworm)",
		ContainerRuntimeVersion: "containerd://2.1.0",
		KubeletVersion:          "v1.34.4+microlet.dev",
		KubeletPort:             10250,
	}
}

func TestInitialNode(t *testing.T) {
	reg := Registration{
		Labels: map[string]string{"node.kubernetes.io/pool": "a", v1.LabelHostname: "custom"},
		Taints: []v1.Taint{{Key: "dedicated", Value: "gpu", Effect: v1.TaintEffectNoSchedule}},
	}
	node, events := InitialNode("node-a", reg, readyFacts(), t0)

	wantLabels := map[string]string{
		v1.LabelHostname:          "custom", // node_labels win, as --node-labels
		v1.LabelOSStable:          goruntime.GOOS,
		v1.LabelArchStable:        goruntime.GOARCH,
		"beta.kubernetes.io/os":   goruntime.GOOS,
		"beta.kubernetes.io/arch": goruntime.GOARCH,
		"node.kubernetes.io/pool": "a",
	}
	if diff := cmp.Diff(wantLabels, node.Labels); diff != "" {
		t.Errorf("labels (-want +got):\n%s", diff)
	}
	if node.Annotations[controllerManagedAttach] != "true" {
		t.Errorf("annotations = %v, want the controller-managed attach-detach one", node.Annotations)
	}
	if diff := cmp.Diff(reg.Taints, node.Spec.Taints); diff != "" {
		t.Errorf("taints (-want +got):\n%s", diff)
	}
	wantAddresses := []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "10.0.0.5"}, {Type: v1.NodeHostName, Address: "node-a"}}
	if diff := cmp.Diff(wantAddresses, node.Status.Addresses); diff != "" {
		t.Errorf("addresses (-want +got):\n%s", diff)
	}
	info := node.Status.NodeInfo
	wantInfo := v1.NodeSystemInfo{MachineID: "m1", SystemUUID: "u1", BootID: "b1", KernelVersion: "6.1.0",
		OSImage: "Debian GNU/Linux 12 (bookworm)", ContainerRuntimeVersion: "containerd://2.1.0",
		KubeletVersion: "v1.34.4+microlet.dev", OperatingSystem: goruntime.GOOS, Architecture: goruntime.GOARCH}
	if diff := cmp.Diff(wantInfo, info); diff != "" {
		t.Errorf("nodeInfo (-want +got):\n%s", diff)
	}
	if node.Status.DaemonEndpoints.KubeletEndpoint.Port != 10250 {
		t.Errorf("daemonEndpoints = %+v", node.Status.DaemonEndpoints)
	}
	var types []v1.NodeConditionType
	for _, c := range node.Status.Conditions {
		types = append(types, c.Type)
		if !c.LastTransitionTime.Time.Equal(t0) || !c.LastHeartbeatTime.Time.Equal(t0) {
			t.Errorf("condition %s times = %v/%v, want %v", c.Type, c.LastTransitionTime, c.LastHeartbeatTime, t0)
		}
	}
	if diff := cmp.Diff([]v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure, v1.NodeReady}, types); diff != "" {
		t.Errorf("condition order (-want +got):\n%s", diff)
	}
	var reasons []string
	for _, e := range events {
		reasons = append(reasons, e.Reason)
	}
	// A new Ready condition is no transition; new pressure conditions are
	// (Unknown to False), as the kubelet's first events show.
	if diff := cmp.Diff([]string{"NodeHasSufficientMemory", "NodeHasNoDiskPressure", "NodeHasSufficientPID"}, reasons); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

func TestReconcileExisting(t *testing.T) {
	initial, _ := InitialNode("node-a", Registration{}, readyFacts(), t0)
	tests := []struct {
		name        string
		existing    func() *v1.Node
		wantChanged bool
		check       func(t *testing.T, n *v1.Node)
	}{{
		name:     "registered by the same agent before: nothing to do",
		existing: func() *v1.Node { return initial.DeepCopy() },
	}, {
		name: "a user's label and taint stay, a default label is set again",
		existing: func() *v1.Node {
			n := initial.DeepCopy()
			n.Labels["team"] = "x"
			n.Labels[v1.LabelHostname] = "old"
			n.Spec.Taints = []v1.Taint{{Key: "k", Effect: v1.TaintEffectNoSchedule}}
			return n
		},
		wantChanged: true,
		check: func(t *testing.T, n *v1.Node) {
			if n.Labels["team"] != "x" || n.Labels[v1.LabelHostname] != "node-a" || len(n.Spec.Taints) != 1 {
				t.Errorf("labels %v taints %v", n.Labels, n.Spec.Taints)
			}
		},
	}, {
		name: "attach-detach annotation missing",
		existing: func() *v1.Node {
			n := initial.DeepCopy()
			n.Annotations = nil
			return n
		},
		wantChanged: true,
		check: func(t *testing.T, n *v1.Node) {
			if n.Annotations[controllerManagedAttach] != "true" {
				t.Errorf("annotations %v", n.Annotations)
			}
		},
	}, {
		name: "a huge page size the machine lost goes, a new one comes",
		existing: func() *v1.Node {
			n := initial.DeepCopy()
			delete(n.Status.Capacity, "hugepages-2Mi")
			n.Status.Capacity["hugepages-1Gi"] = resource.MustParse("1Gi")
			n.Status.Allocatable["hugepages-1Gi"] = resource.MustParse("1Gi")
			return n
		},
		wantChanged: true,
		check: func(t *testing.T, n *v1.Node) {
			if _, ok := n.Status.Capacity["hugepages-1Gi"]; ok {
				t.Errorf("hugepages-1Gi still in capacity")
			}
			if _, ok := n.Status.Allocatable["hugepages-2Mi"]; !ok {
				t.Errorf("hugepages-2Mi not in allocatable")
			}
		},
	}, {
		name: "no capacity at all: the initial one",
		existing: func() *v1.Node {
			n := initial.DeepCopy()
			n.Status.Capacity, n.Status.Allocatable = nil, nil
			return n
		},
		wantChanged: true,
		check: func(t *testing.T, n *v1.Node) {
			if !n.Status.Capacity.Cpu().Equal(resource.MustParse("2")) {
				t.Errorf("capacity %v", n.Status.Capacity)
			}
		},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n := tt.existing()
			if got := ReconcileExisting(n, initial); got != tt.wantChanged {
				t.Errorf("changed = %t, want %t", got, tt.wantChanged)
			}
			if tt.check != nil {
				tt.check(t, n)
			}
		})
	}
}

func TestKubeletVersion(t *testing.T) {
	tests := []struct{ api, agent, want string }{
		{"v0.34.4", "dev", "v1.34.4+microlet.dev"},
		{"v0.34.4", "v0.3.0-5-gabc123", "v1.34.4+microlet.v0.3.0-5-gabc123"},
		{"v0.34.4", "1.0 (custom)", "v1.34.4+microlet.1.0-custom"},
		{"v0.34.4", "", "v1.34.4+microlet"},
	}
	for _, tt := range tests {
		if got := KubeletVersion(tt.api, tt.agent); got != tt.want {
			t.Errorf("KubeletVersion(%q, %q) = %q, want %q", tt.api, tt.agent, got, tt.want)
		}
	}
}

func TestEnsureRequiredLabels(t *testing.T) {
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{v1.LabelOSStable: "plan9"}}}
	if !ensureRequiredLabels(n) || n.Labels[v1.LabelOSStable] != goruntime.GOOS || n.Labels[v1.LabelArchStable] != goruntime.GOARCH {
		t.Errorf("labels %v", n.Labels)
	}
	if ensureRequiredLabels(n) {
		t.Errorf("second call changed the labels again")
	}
}

var errRuntimeDown = errors.New("container runtime is down: connection refused")
