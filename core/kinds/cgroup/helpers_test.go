package cgroup

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/hashicorp/go-hclog"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/microlet/microlet/core/node/machine"
	"github.com/microlet/microlet/core/pluginhost"
	"github.com/microlet/microlet/internal/devnode"
	"github.com/microlet/microlet/internal/prereq"
	"github.com/microlet/microlet/plugins/cgroup/planner"
	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/sdktest"
)

const (
	Mi = int64(1) << 20
	Gi = int64(1) << 30
)

var pluginInfo = sdk.Info{Kind: sdk.KindCgroup, Name: "default", Version: "0.0.0"}

// testCapacity is a small node: 2 CPUs, 4Gi, one empty 2Mi huge page pool.
func testCapacity() *machine.Capacity {
	return &machine.Capacity{
		CPUMillis: 2000, MemoryBytes: 4 * Gi, EphemeralStorageBytes: 100 * Gi,
		HugePages: map[v1.ResourceName]int64{"hugepages-2Mi": 0}, Pods: 110, PIDs: 10000,
	}
}

// switchPlugin is a cgroup plugin a test makes absent, down or serving.
type switchPlugin struct {
	mu     sync.Mutex
	state  pluginState
	client cgroupv1.CgroupServiceClient
}

type pluginState int

const (
	serving pluginState = iota
	absent
	down
)

func (p *switchPlugin) set(s pluginState) {
	p.mu.Lock()
	p.state = s
	p.mu.Unlock()
}

func (p *switchPlugin) Call(ctx context.Context, fn func(context.Context, pluginhost.Conn[cgroupv1.CgroupServiceClient]) error) error {
	p.mu.Lock()
	state, client := p.state, p.client
	p.mu.Unlock()
	switch state {
	case absent:
		return fmt.Errorf("no cgroup plugin is configured: %w", pluginhost.ErrNotConfigured)
	case down:
		return fmt.Errorf("%w: plugin cgroup/default is restarting", pluginhost.ErrUnavailable)
	}
	return fn(ctx, pluginhost.Conn[cgroupv1.CgroupServiceClient]{Client: client})
}

// servePlanner serves the default planner in the test binary, configured
// with block, as the core reaches it.
func servePlanner(t *testing.T, block map[string]any) *switchPlugin {
	t.Helper()
	h := sdktest.InProcess(t, pluginInfo, &planner.Plugin{})
	if err := h.Configure(block); err != nil {
		t.Fatalf("configure the planner: %v", err)
	}
	return &switchPlugin{client: h.Cgroup()}
}

// logBuffer collects a logger's lines.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) count(s string) int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Count(b.buf.String(), s)
}

func testLogger(t *testing.T, out *logBuffer) hclog.Logger {
	return hclog.New(&hclog.LoggerOptions{Name: t.Name(), Level: hclog.Debug, Output: out})
}

// fakeV2Tree makes a cgroup v2 tree in a temp dir with the files the
// library expects where the kernel would have made them: the root's
// controllers, and cgroup.subtree_control in every cgroup a test creates
// children in.
func fakeV2Tree(t *testing.T, parents ...string) *machine.Cgroups {
	t.Helper()
	root := t.TempDir()
	files := map[string]string{
		"cgroup.controllers":     "cpuset cpu io memory hugetlb pids rdma misc\n",
		"cgroup.subtree_control": "",
		"cgroup.procs":           "",
	}
	for _, dir := range append([]string{"/"}, parents...) {
		for name, content := range files {
			full := filepath.Join(root, dir, name)
			if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(full, []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
	return &machine.Cgroups{Mode: machine.CgroupV2, Unified: root}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))
}

// privateV1Root makes a cgroup root of its own in every v1 hierarchy the
// manager uses, so that nothing collides with other tests or containerd,
// and removes it with everything below it when the test ends. It skips
// the test unless the machine has v1 controllers and the test runs as root.
func privateV1Root(t *testing.T) (*machine.Cgroups, string) {
	t.Helper()
	prereq.Root(t, "it makes real cgroups")
	cg, err := machine.DetectCgroups()
	if err != nil {
		t.Fatal(err)
	}
	if cg.Version() != 1 {
		// The machine's cgroup mode is no prerequisite one can install.
		t.Skipf("the machine manages cgroups in v%d mode; the v1 test needs v1 or hybrid", cg.Version())
	}
	return cg, devnode.CgroupT(t, "microlet-test")
}

// testPod builds a pod whose containers have the given requests and
// limits ("cpu=500m,memory=1Gi"; "" for none).
func testPod(uid string, containers ...[2]string) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Namespace: "default", Name: "pod-" + uid}}
	for i, c := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{
			Name:      fmt.Sprintf("c%d", i),
			Resources: v1.ResourceRequirements{Requests: parseResources(c[0]), Limits: parseResources(c[1])},
		})
	}
	return pod
}

func parseResources(s string) v1.ResourceList {
	if s == "" {
		return nil
	}
	out := v1.ResourceList{}
	for _, kv := range strings.Split(s, ",") {
		name, q, _ := strings.Cut(kv, "=")
		out[v1.ResourceName(name)] = resource.MustParse(q)
	}
	return out
}

func guaranteed(uid, cpu, memory string) *v1.Pod {
	r := "cpu=" + cpu + ",memory=" + memory
	return testPod(uid, [2]string{r, r})
}
