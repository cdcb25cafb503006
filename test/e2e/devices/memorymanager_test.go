//go:build e2e

package devicese2e

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/microlet/microlet/internal/devnode"
	"github.com/microlet/microlet/internal/prereq"
)

// staticMemoryAndTopology is the kubelet's static CPU and memory managers
// under the single-numa-node topology manager. What node allocatable holds
// back of memory (kube_reserved 100Mi plus the built-in evictor's
// memory.available<100Mi) is reserved on NUMA node 0, the only one, as
// upstream's validation requires.
const staticMemoryAndTopology = staticCPUs + `
    memory_manager_policy = "Static"
    kube_reserved = { memory = "100Mi" }
    reserved_memory = [{ numa_node = 0, limits = { memory = "200Mi" } }]
    topology_manager_policy = "single-numa-node"
    topology_manager_scope = "container"`

// memsOf is the container's cpuset.mems as written to its own cgroup:
// empty on cgroup v2 when nothing was written (it then inherits every
// node).
func (n *testNode) memsOf(pod *v1.Pod) string {
	out := n.exec(pod, "sh", "-c", "cat /sys/fs/cgroup/cpuset/cpuset.mems 2>/dev/null || cat /sys/fs/cgroup/cpuset.mems")
	return strings.TrimSpace(out)
}

// specMems is the cpuset.mems the core asked the runtime for: the
// container's OCI spec as containerd reports it (CRI ContainerStatus,
// verbose). On cgroup v1 a child cpuset copies its parent's mems, so the
// cgroup alone cannot tell a written "0" from an inherited one on a
// machine of one node.
func (n *testNode) specMems(pod *v1.Pod) string {
	n.t.Helper()
	id := strings.TrimPrefix(pod.Status.ContainerStatuses[0].ContainerID, "containerd://")
	resp, err := n.cri.ContainerStatus(n.t.Context(), &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		n.t.Fatalf("ContainerStatus of %s: %v", pod.Name, err)
	}
	var info struct {
		RuntimeSpec struct {
			Linux struct {
				Resources struct {
					CPU struct {
						Mems string `json:"mems"`
					} `json:"cpu"`
				} `json:"resources"`
			} `json:"linux"`
		} `json:"runtimeSpec"`
	}
	if err := json.Unmarshal([]byte(resp.GetInfo()["info"]), &info); err != nil {
		n.t.Fatalf("the verbose status of %s: %v", pod.Name, err)
	}
	return info.RuntimeSpec.Linux.Resources.CPU.Mems
}

// memoryState is the kubelet's memory_manager_state as the core wrote it.
func memoryState(t *testing.T, rootDir string) (policy string, entries map[string]map[string][]memoryBlock, reserved uint64) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(rootDir, "memory_manager_state"))
	if err != nil {
		t.Fatalf("read memory_manager_state: %v", err)
	}
	var cp struct {
		PolicyName   string `json:"policyName"`
		MachineState map[string]struct {
			MemoryMap map[string]map[string]uint64 `json:"memoryMap"`
		} `json:"machineState"`
		Entries  map[string]map[string][]memoryBlock `json:"entries"`
		Checksum uint64                              `json:"checksum"`
	}
	if err := json.Unmarshal(raw, &cp); err != nil || cp.Checksum == 0 {
		t.Fatalf("memory_manager_state %s: %v, want the kubelet's format with a checksum", raw, err)
	}
	return cp.PolicyName, cp.Entries, cp.MachineState["0"].MemoryMap["memory"]["reserved"]
}

// memoryBlock is one block of the state file's entries.
type memoryBlock struct {
	NUMAAffinity []int  `json:"numaAffinity"`
	Type         string `json:"type"`
	Size         uint64 `json:"size"`
}

// listedMemory is what the pod-resources List says of a container's
// memory, as "<type>=<size>@<nodes>".
func (n *testNode) listedMemory(client podresourcesv1.PodResourcesListerClient, pod, container string) string {
	n.t.Helper()
	resp, err := client.List(n.t.Context(), &podresourcesv1.ListPodResourcesRequest{})
	if err != nil {
		n.t.Fatalf("pod-resources List: %v", err)
	}
	for _, p := range resp.GetPodResources() {
		for _, c := range p.GetContainers() {
			if p.GetName() == pod && c.GetName() == container {
				return describeMemory(c.GetMemory())
			}
		}
	}
	return "not listed"
}

func describeMemory(mem []*podresourcesv1.ContainerMemory) string {
	var parts []string
	for _, m := range mem {
		var nodes []int64
		for _, node := range m.GetTopology().GetNodes() {
			nodes = append(nodes, node.GetID())
		}
		parts = append(parts, fmt.Sprintf("%s=%d@%v", m.GetMemoryType(), m.GetSize(), nodes))
	}
	return strings.Join(parts, " ")
}

// On this machine's one NUMA node, with the static memory manager and the
// single-numa-node topology manager: a Guaranteed pod's memory is pinned
// to node 0 (its container's cpuset.mems is written "0", the state file
// and the pod-resources API say so) while a BestEffort pod's is not; the
// hints of its CPU, memory and device (one without topology) merge; a
// crash of the core restarts nothing and keeps the assignment; a second
// Guaranteed pod wanting the one exclusive CPU left is refused with
// TopologyAffinityError, as upstream refuses it; the memory returns when
// the pod goes, and a regular init container's once the container after it
// is created. What one node cannot show: placement across NUMA nodes,
// devices picked on the topology manager's node among others (the
// plugin's and the core's unit tests cover both on two fake nodes).
func TestStaticMemoryManagerSingleNUMANode(t *testing.T) {
	if runtime.NumCPU() != 2 {
		prereq.Missing(t, "the test is written for a node of exactly 2 CPUs (reserved_system_cpus = \"0\", one to hand out); this one has %d", runtime.NumCPU())
	}
	if info, err := os.Stat("/dev/fuse"); err != nil || info.Mode()&fs.ModeCharDevice == 0 {
		prereq.Missing(t, "this host has no /dev/fuse character device (%v); load the fuse module: modprobe fuse", err)
	}
	if nodes, _ := filepath.Glob("/sys/devices/system/node/node[0-9]*"); len(nodes) > 1 {
		prereq.Missing(t, "the test is written for one NUMA node; this machine has %d", len(nodes))
	}
	_, statErr := os.Stat("/sys/fs/cgroup/cgroup.controllers")
	v2 := statErr == nil
	n := startNodeCgroup(t, staticMemoryAndTopology, hostdevFuse)

	n.addPod("shared", bestEffortPod("shared"))
	n.addPod("pinned", pinnedPod("pinned"))
	pinned := n.running("pinned")
	if got := n.memsOf(pinned); got != "0" {
		t.Errorf("the Guaranteed container's cpuset.mems is %q, want 0", got)
	}
	if got := n.specMems(pinned); got != "0" {
		t.Errorf("the Guaranteed container's spec asks for cpuset.mems %q, want 0", got)
	}
	if got := n.specMems(n.running("shared")); got != "" {
		t.Errorf("the BestEffort container's spec asks for cpuset.mems %q, want none", got)
	}
	if got := n.cpusetOf(pinned); got != "1" {
		t.Errorf("the Guaranteed container's cpuset.cpus is %q, want 1", got)
	}
	if got := n.memsOf(n.running("shared")); v2 && got != "" {
		t.Errorf("the BestEffort container's cpuset.mems is %q, want none written", got)
	}
	const size = 64 << 20
	wantEntry := fmt.Sprintf("map[%s:map[app:[{[0] memory %d}]]]", pinned.UID, size)
	policy, entries, reserved := memoryState(t, n.rootDir)
	if policy != "Static" || fmt.Sprint(entries) != wantEntry || reserved != size {
		t.Errorf("memory_manager_state: policy %q entries %v reserved %v; want Static, %s, %d", policy, entries, reserved, wantEntry, size)
	}
	client := podResourcesClient(t, n.rootDir)
	wantListed := fmt.Sprintf("memory=%d@[0]", size)
	if got := n.listedMemory(client, "pinned-"+nodeName, "app"); got != wantListed {
		t.Errorf("pod-resources List of pinned/app's memory: %q, want %q", got, wantListed)
	}
	if got := n.listedMemory(client, "shared-"+nodeName, "app"); got != "" {
		t.Errorf("pod-resources List of shared/app's memory: %q, want none", got)
	}
	alloc, err := client.GetAllocatableResources(t.Context(), &podresourcesv1.AllocatableResourcesRequest{})
	if err != nil || !strings.HasPrefix(describeMemory(alloc.GetMemory()), "memory=") || !strings.HasSuffix(describeMemory(alloc.GetMemory()), "@[0]") {
		t.Errorf("pod-resources GetAllocatableResources memory: %v, %v; want node 0's memory", alloc.GetMemory(), err)
	}

	// A crash of the core: nothing restarts, the assignment stays.
	id := pinned.Status.ContainerStatuses[0].ContainerID
	n.killCore()
	n.startCore()
	if cs := n.running("pinned").Status.ContainerStatuses[0]; cs.ContainerID != id || cs.RestartCount != 0 {
		t.Errorf("after the core's restart the container is %s (restarts %d), want %s not restarted", cs.ContainerID, cs.RestartCount, id)
	}
	if got := n.memsOf(n.running("pinned")); got != "0" {
		t.Errorf("after the restart cpuset.mems is %q, want 0", got)
	}
	if got := n.specMems(n.running("pinned")); got != "0" {
		t.Errorf("after the restart the spec asks for cpuset.mems %q, want 0", got)
	}
	if p, e, r := memoryState(t, n.rootDir); p != "Static" || fmt.Sprint(e) != wantEntry || r != size {
		t.Errorf("memory_manager_state after the restart: %q %v %v; want Static, %s, %d", p, e, r, wantEntry, size)
	}
	client = podResourcesClient(t, n.rootDir)
	n.eventually("pod-resources memory after the restart", func() (bool, string) {
		got := n.listedMemory(client, "pinned-"+nodeName, "app")
		return got == wantListed, got
	})

	// The one exclusive CPU is taken: the CPU manager has no NUMA hint
	// for a second one, and single-numa-node refuses the pod.
	n.addPod("second", sleepPod("second", `cpu: "1"`, "memory: 64Mi"))
	if refused := n.refused("second"); refused.Status.Reason != "TopologyAffinityError" || !strings.HasSuffix(refused.Status.Message, "Resources cannot be allocated with Topology locality") {
		t.Errorf("a second Guaranteed pod wanting the one CPU: %+v, want refused with TopologyAffinityError", refused.Status)
	}
	if _, e, _ := memoryState(t, n.rootDir); fmt.Sprint(e) != wantEntry {
		t.Errorf("the refused pod changed memory_manager_state: %v", e)
	}

	// The pod goes: its memory returns.
	if err := os.Remove(filepath.Join(n.manifestDir, "pinned.yaml")); err != nil {
		t.Fatal(err)
	}
	n.eventually("memory_manager_state without the pod", func() (bool, string) {
		_, e, r := memoryState(t, n.rootDir)
		return len(e) == 0 && r == 0, fmt.Sprintf("entries %v reserved %v", e, r)
	})

	// A regular init container's memory is released when the next
	// container is created, as upstream's AddContainer releases it: of
	// its 96Mi, the app container reused 32Mi, and the 64Mi left return.
	n.addPod("staged", stagedPod("staged"))
	staged := n.running("staged")
	wantEntry = fmt.Sprintf("map[%s:map[app:[{[0] memory %d}]]]", staged.UID, 32<<20)
	if _, e, r := memoryState(t, n.rootDir); fmt.Sprint(e) != wantEntry || r != 32<<20 {
		t.Errorf("memory_manager_state once the app container runs: entries %v reserved %v; want %s, %d (the init container's memory released)", e, r, wantEntry, 32<<20)
	}
}

// stagedPod is a Guaranteed pod whose init container asks for more memory
// than its app container; neither asks for a whole CPU.
func stagedPod(name string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata:
  name: %[1]s
  namespace: default
spec:
  terminationGracePeriodSeconds: 1
  initContainers:
  - name: init
    image: %[2]s
    command: ["sh", "-c", "true"]
    resources:
      limits: {cpu: 500m, memory: 96Mi}
  containers:
  - name: app
    image: %[2]s
    command: ["sleep", "3600"]
    resources:
      limits: {cpu: 500m, memory: 32Mi}
`, name, devnode.DefaultTestImage)
}
