//go:build e2e

package devicese2e

import (
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	v1 "k8s.io/api/core/v1"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/microlet/microlet/internal/prereq"
)

// staticCPUs is the kubelet's static CPU manager policy with CPU 0 kept
// for the system: on two CPUs, one is left to hand out.
const staticCPUs = `    cpu_manager_policy = "static"
    reserved_system_cpus = "0"`

// pinnedPod is a Guaranteed pod with one whole CPU and the fuse device.
func pinnedPod(name string) string {
	return sleepPod(name, `cpu: "1"`, "memory: 64Mi", fuse+`: "1"`)
}

// bestEffortPod asks for nothing: it runs in the shared pool.
func bestEffortPod(name string) string { return sleepPod(name) }

// cpusetOf is the container's cpuset.cpus as it sees its own cgroup
// (cgroup v1's cpuset hierarchy, or v2's file).
func (n *testNode) cpusetOf(pod *v1.Pod) string {
	out := n.exec(pod, "sh", "-c", "cat /sys/fs/cgroup/cpuset/cpuset.cpus 2>/dev/null || cat /sys/fs/cgroup/cpuset.cpus.effective")
	return strings.TrimSpace(out)
}

// eventuallyCPUSet waits until the named pod's container has the cpuset.
func (n *testNode) eventuallyCPUSet(name, want string) {
	n.t.Helper()
	n.eventually(name+"'s cpuset.cpus "+want, func() (bool, string) {
		got := n.cpusetOf(n.running(name))
		return got == want, got
	})
}

// podResourcesClient connects as monitoring agents do: gRPC on the
// kubelet's socket, no credentials.
func podResourcesClient(t *testing.T, rootDir string) podresourcesv1.PodResourcesListerClient {
	t.Helper()
	conn, err := grpc.NewClient("unix://"+filepath.Join(rootDir, "pod-resources", "kubelet.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return podresourcesv1.NewPodResourcesListerClient(conn)
}

// listed is what the pod-resources List says of a pod's container, as
// "cpus=<ids> <resource>=<ids>".
func (n *testNode) listed(client podresourcesv1.PodResourcesListerClient, pod, container string) string {
	n.t.Helper()
	resp, err := client.List(n.t.Context(), &podresourcesv1.ListPodResourcesRequest{})
	if err != nil {
		n.t.Fatalf("pod-resources List: %v", err)
	}
	for _, p := range resp.GetPodResources() {
		if p.GetName() != pod || p.GetNamespace() != "default" {
			continue
		}
		for _, c := range p.GetContainers() {
			if c.GetName() == container {
				return describeResources(c.GetCpuIds(), c.GetDevices())
			}
		}
	}
	return "not listed"
}

func describeResources(cpus []int64, devices []*podresourcesv1.ContainerDevices) string {
	out := fmt.Sprintf("cpus=%v", cpus)
	for _, d := range devices {
		out += fmt.Sprintf(" %s=%v", d.GetResourceName(), d.GetDeviceIds())
	}
	return out
}

// cpuState is the kubelet's cpu_manager_state as the core wrote it.
func cpuState(t *testing.T, rootDir string) (policy, shared string, entries map[string]map[string]string) {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(rootDir, "cpu_manager_state"))
	if err != nil {
		t.Fatalf("read cpu_manager_state: %v", err)
	}
	var cp struct {
		PolicyName    string                       `json:"policyName"`
		DefaultCPUSet string                       `json:"defaultCpuSet"`
		Entries       map[string]map[string]string `json:"entries"`
		Checksum      uint64                       `json:"checksum"`
	}
	if err := json.Unmarshal(raw, &cp); err != nil || cp.Checksum == 0 {
		t.Fatalf("cpu_manager_state %s: %v, want the kubelet's format with a checksum", raw, err)
	}
	return cp.PolicyName, cp.DefaultCPUSet, cp.Entries
}

// On two CPUs with CPU 0 reserved, a Guaranteed pod asking for one CPU
// gets CPU 1 for itself and a BestEffort pod's cpuset shrinks to CPU 0;
// the pod-resources API lists the pod's CPU and its device as monitoring
// agents read them; a crash of the core changes nothing (same containers,
// same cpusets, the same state file); the pool grows back when the pod
// goes.
func TestStaticCPUManagerAndPodResources(t *testing.T) {
	if runtime.NumCPU() != 2 {
		prereq.Missing(t, "the test is written for a node of exactly 2 CPUs (reserved_system_cpus = \"0\", one to hand out); this one has %d", runtime.NumCPU())
	}
	if info, err := os.Stat("/dev/fuse"); err != nil || info.Mode()&fs.ModeCharDevice == 0 {
		prereq.Missing(t, "this host has no /dev/fuse character device (%v); load the fuse module: modprobe fuse", err)
	}
	n := startNodeCgroup(t, staticCPUs, hostdevFuse)

	n.addPod("shared", bestEffortPod("shared"))
	n.eventuallyCPUSet("shared", "0-1")

	n.addPod("pinned", pinnedPod("pinned"))
	pinned := n.running("pinned")
	if got := n.cpusetOf(pinned); got != "1" {
		t.Errorf("the Guaranteed container's cpuset.cpus is %q, want 1", got)
	}
	n.eventuallyCPUSet("shared", "0")

	info, err := os.Stat(filepath.Join(n.rootDir, "pod-resources"))
	if err != nil || info.Mode().Perm() != 0o750 {
		t.Errorf("the pod-resources directory: %v, %v; want mode 0750 as the kubelet's", info.Mode(), err)
	}
	client := podResourcesClient(t, n.rootDir)
	wantListed := "cpus=[1] " + fuse + "=[/dev/fuse]"
	if got := n.listed(client, "pinned-"+nodeName, "app"); got != wantListed {
		t.Errorf("pod-resources List for pinned/app: %s, want %s", got, wantListed)
	}
	if got := n.listed(client, "shared-"+nodeName, "app"); got != "cpus=[]" {
		t.Errorf("pod-resources List for shared/app: %s, want no CPUs nor devices", got)
	}
	got, err := client.Get(t.Context(), &podresourcesv1.GetPodResourcesRequest{PodName: "pinned-" + nodeName, PodNamespace: "default"})
	if err != nil || len(got.GetPodResources().GetContainers()) != 1 || !slices.Equal(got.GetPodResources().GetContainers()[0].GetCpuIds(), []int64{1}) {
		t.Errorf("pod-resources Get for pinned: %v, %v; want app with CPU 1", got, err)
	}
	alloc, err := client.GetAllocatableResources(t.Context(), &podresourcesv1.AllocatableResourcesRequest{})
	if err != nil || describeResources(alloc.GetCpuIds(), alloc.GetDevices()) != wantListed {
		t.Errorf("pod-resources GetAllocatableResources: %v, %v; want %s", alloc, err, wantListed)
	}
	policy, shared, entries := cpuState(t, n.rootDir)
	wantEntries := map[string]map[string]string{string(pinned.UID): {"app": "1"}}
	if policy != "static" || shared != "0" || fmt.Sprint(entries) != fmt.Sprint(wantEntries) {
		t.Errorf("cpu_manager_state: policy %q default %q entries %v; want static, 0, %v", policy, shared, entries, wantEntries)
	}

	// A crash of the core: nothing restarts, nothing moves.
	ids := map[string]string{}
	for _, name := range []string{"pinned", "shared"} {
		ids[name] = n.running(name).Status.ContainerStatuses[0].ContainerID
	}
	n.killCore()
	n.startCore()
	for _, name := range []string{"pinned", "shared"} {
		if cs := n.running(name).Status.ContainerStatuses[0]; cs.ContainerID != ids[name] || cs.RestartCount != 0 {
			t.Errorf("after the core's restart %s's container is %s (restarts %d), want %s not restarted", name, cs.ContainerID, cs.RestartCount, ids[name])
		}
	}
	if got := n.cpusetOf(n.running("pinned")); got != "1" {
		t.Errorf("after the restart the Guaranteed container's cpuset.cpus is %q, want 1", got)
	}
	if got := n.cpusetOf(n.running("shared")); got != "0" {
		t.Errorf("after the restart the BestEffort container's cpuset.cpus is %q, want 0", got)
	}
	if p, s, e := cpuState(t, n.rootDir); p != "static" || s != "0" || fmt.Sprint(e) != fmt.Sprint(wantEntries) {
		t.Errorf("cpu_manager_state after the restart: %q %q %v; want static, 0, %v", p, s, e, wantEntries)
	}
	client = podResourcesClient(t, n.rootDir)
	n.eventually("pod-resources after the restart", func() (bool, string) {
		got := n.listed(client, "pinned-"+nodeName, "app")
		return got == wantListed, got
	})
	// CPU 1 is still taken: a second Guaranteed pod asking for it is refused.
	n.addPod("second", pinnedPod("second"))
	if refused := n.refused("second"); refused.Status.Reason != "UnexpectedAdmissionError" {
		t.Errorf("a second pod asking for the one CPU: %+v, want refused", refused.Status)
	}

	// The pod goes: its CPU returns to the shared pool.
	if err := os.Remove(filepath.Join(n.manifestDir, "pinned.yaml")); err != nil {
		t.Fatal(err)
	}
	n.eventually("pinned gone", func() (bool, string) {
		pod := n.pod("pinned")
		if pod == nil {
			return true, ""
		}
		return false, fmt.Sprintf("phase %q containers %+v", pod.Status.Phase, pod.Status.ContainerStatuses)
	})
	n.eventuallyCPUSet("shared", "0-1")
	n.eventually("cpu_manager_state without the pod", func() (bool, string) {
		_, s, e := cpuState(t, n.rootDir)
		return s == "0-1" && len(e) == 0, fmt.Sprintf("default %q entries %v", s, e)
	})
}
