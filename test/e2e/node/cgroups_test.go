//go:build e2e

package nodee2e

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/kinds/cgroup"
	"github.com/microlet/microlet/core/node/machine"
)

// withResources is a sleeper whose container has the given resources.
func withResources(name, resources string) string {
	return sleeper(name) + "    resources: " + resources + "\n"
}

func TestPodCgroupsAndOOMScore(t *testing.T) {
	t.Parallel()
	n := startNode(t, nodeOptions{})
	capacity, err := machine.ReadCapacity(machine.Options{RootDir: n.rootDir, MaxPods: 110})
	if err != nil {
		t.Fatal(err)
	}
	cgroups, err := machine.DetectCgroups()
	if err != nil {
		t.Fatal(err)
	}
	floor, err := oomScoreAdj(n.dev.PID)
	if err != nil {
		t.Fatal(err)
	}
	const mi = 1 << 20
	tests := []struct {
		name, resources string
		qos             v1.PodQOSClass
		// parent is the pod cgroup's parent under the cgroup root.
		parent string
		want   cgroup.CgroupValues
		oom    int
	}{{
		name:      "guaranteed",
		resources: "{limits: {cpu: 250m, memory: 96Mi}}",
		qos:       v1.PodQOSGuaranteed,
		parent:    "kubepods",
		// shares = 250 x 1024 / 1000; quota = 250m of a 100 ms period.
		want: cgroup.CgroupValues{CPUShares: 256, CPUQuota: 25000, CPUPeriod: 100000, MemoryLimit: 96 * mi},
		oom:  -997,
	}, {
		name:      "burstable",
		resources: "{requests: {cpu: 100m, memory: 64Mi}, limits: {cpu: 200m, memory: 128Mi}}",
		qos:       v1.PodQOSBurstable,
		parent:    "kubepods/burstable",
		want:      cgroup.CgroupValues{CPUShares: 102, CPUQuota: 20000, CPUPeriod: 100000, MemoryLimit: 128 * mi},
		oom:       burstableOOMScoreAdj(64*mi, capacity.MemoryBytes),
	}, {
		name:      "besteffort",
		resources: "{}",
		qos:       v1.PodQOSBestEffort,
		parent:    "kubepods/besteffort",
		want:      cgroup.CgroupValues{CPUShares: 2, CPUQuota: -1, CPUPeriod: 100000, MemoryLimit: -1},
		oom:       1000,
	}}
	for _, tt := range tests {
		n.writeManifest(tt.name+".yaml", withResources(tt.name, tt.resources))
	}
	for _, tt := range tests {
		p := n.waitPod(tt.name, "running and ready", runningAndReady)
		if p.Status.QOSClass != tt.qos {
			t.Errorf("%s: QoS class %s, want %s", tt.name, p.Status.QOSClass, tt.qos)
		}
		podCgroup := path.Join(n.cgroupRoot, tt.parent, "pod"+string(p.UID))
		got, err := cgroup.ReadCgroup(cgroups, podCgroup)
		if err != nil {
			t.Errorf("%s: reading its pod cgroup: %v", tt.name, err)
			continue
		}
		if got.CPUShares != tt.want.CPUShares || got.CPUQuota != tt.want.CPUQuota || got.CPUPeriod != tt.want.CPUPeriod || got.MemoryLimit != tt.want.MemoryLimit {
			t.Errorf("%s: pod cgroup %s holds shares %d, quota %d/%d, memory %d; want %d, %d/%d, %d", tt.name, podCgroup,
				got.CPUShares, got.CPUQuota, got.CPUPeriod, got.MemoryLimit,
				tt.want.CPUShares, tt.want.CPUQuota, tt.want.CPUPeriod, tt.want.MemoryLimit)
		}
		_, info := n.containerStatus(runtimeID(containerOf(p, "app")))
		if asked := info.Config.GetLinux().GetResources().GetOomScoreAdj(); asked != int64(tt.oom) {
			t.Errorf("%s: the container was created with oom_score_adj %d, want %d", tt.name, asked, tt.oom)
		}
		// The devnode's containerd restricts oom_score_adj to no less than
		// its own (restrict_oom_score_adj: this machine may not lower it).
		if oom, err := oomScoreAdj(info.PID); err != nil || oom != max(tt.oom, floor) {
			t.Errorf("%s: the container's process %d has oom_score_adj %d (%v), want %d", tt.name, info.PID, oom, err, max(tt.oom, floor))
		}
	}
}

// burstableOOMScoreAdj is upstream's oom_score_adj for a Burstable
// container (pkg/kubelet/qos/policy.go): 1000 less its share of memory, in
// [3, 999].
func burstableOOMScoreAdj(request, capacity int64) int {
	adj := 1000 - (1000*request)/capacity
	return int(min(max(adj, 3), 999))
}

func oomScoreAdj(pid int) (int, error) {
	if pid == 0 {
		return 0, fmt.Errorf("the runtime reports no pid")
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/oom_score_adj", pid))
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// cgroupExists says whether the cgroup at path (below the hierarchy's
// root) exists: in the memory controller's v1 hierarchy, or the v2 tree.
func (n *testNode) cgroupExists(cgroup string) bool {
	n.t.Helper()
	cgroups, err := machine.DetectCgroups()
	if err != nil {
		n.t.Fatal(err)
	}
	root := cgroups.Unified
	if cgroups.Mode != machine.CgroupV2 {
		root = cgroups.V1["memory"]
	}
	_, err = os.Stat(filepath.Join(root, cgroup))
	return err == nil
}
