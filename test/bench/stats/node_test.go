//go:build e2e

package statsbench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"google.golang.org/protobuf/types/known/timestamppb"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/internal/devnode"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// Labels the core sets on sandboxes and containers (k8s.io/kubelet/pkg/types).
const (
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"
	namespace          = "bench"
)

// node is a devnode with pods made directly through the CRI, laid out as
// the core lays them out, and the core's view of them for the host
// service.
type node struct {
	n *devnode.Node
	// root is the agent's root directory; logs its pod logs directory.
	root, logs string
	// cgroupRoot holds the pods' cgroups (<cgroupRoot>/kubepods/...), private
	// to this benchmark.
	cgroupRoot string

	mu   sync.Mutex
	pods []*typesv1.Pod
}

// startNode starts a devnode for the benchmark.
func startNode(b *testing.B) *node {
	cgroupRoot := fmt.Sprintf("/microlet-bench-stats-%d", os.Getpid())
	// Registered before the node's own cleanup, so it runs after the node's
	// Close has removed the sandboxes: the pods' cgroups are empty by then.
	b.Cleanup(func() { removeCgroups(b, cgroupRoot) })
	n := devnode.StartT(b)
	return &node{
		n:          n,
		root:       filepath.Join(n.Dir, "microlet"),
		logs:       filepath.Join(n.Dir, "pod-logs"),
		cgroupRoot: cgroupRoot,
	}
}

// PodViews and NodeView make node the core's state for hostservice.
func (nd *node) PodViews() []*typesv1.Pod {
	nd.mu.Lock()
	defer nd.mu.Unlock()
	return append([]*typesv1.Pod(nil), nd.pods...)
}

func (nd *node) NodeView() *typesv1.Node {
	return &typesv1.Node{Name: "bench-node", RootDir: nd.root, PodLogsDir: nd.logs, CgroupDriver: "cgroupfs", CgroupVersion: 1}
}

// podsCgroup is the cgroup that holds the pods.
func (nd *node) podsCgroup() string { return nd.cgroupRoot + "/kubepods" }

// grow adds pods of one busybox container each until there are count.
func (nd *node) grow(b *testing.B, count int) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	start := len(nd.PodViews())
	next := make(chan int)
	errs := make(chan error, count)
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for i := range next {
				pod, err := nd.runPod(ctx, i)
				if err != nil {
					errs <- err
					continue
				}
				nd.mu.Lock()
				nd.pods = append(nd.pods, pod)
				nd.mu.Unlock()
			}
		})
	}
	for i := start; i < count; i++ {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// runPod makes pod i as the core would: a sandbox in the pod's cgroup with
// its log directory, an emptyDir and etc-hosts under the root directory,
// and one container sleeping.
func (nd *node) runPod(ctx context.Context, i int) (*typesv1.Pod, error) {
	name := fmt.Sprintf("bench-%03d", i)
	uid := fmt.Sprintf("00000000-0000-0000-0000-%012d", i)
	labels := map[string]string{labelPodName: name, labelPodNamespace: namespace, labelPodUID: uid}
	podDir := filepath.Join(nd.root, "pods", uid)
	scratch := filepath.Join(podDir, "volumes", "kubernetes.io~empty-dir", "scratch")
	if err := os.MkdirAll(scratch, 0o755); err != nil {
		return nil, err
	}
	for f, size := range map[string]int{filepath.Join(scratch, "data"): 64 << 10, filepath.Join(podDir, "etc-hosts"): 200} {
		if err := os.WriteFile(f, make([]byte, size), 0o644); err != nil {
			return nil, err
		}
	}
	pod := &typesv1.Pod{
		Uid: uid, Namespace: namespace, Name: name, QosClass: "BestEffort", Phase: "Running",
		CgroupParent: nd.cgroupRoot + "/kubepods/besteffort/pod" + uid,
		LogDirectory: filepath.Join(nd.logs, namespace+"_"+name+"_"+uid),
		Volumes:      []*typesv1.Volume{{Name: "scratch", Type: "emptyDir", HostPath: scratch}},
	}
	config := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: name, Uid: uid, Namespace: namespace},
		Hostname:     name,
		LogDirectory: pod.LogDirectory,
		Labels:       labels,
		Linux:        &runtimeapi.LinuxPodSandboxConfig{CgroupParent: pod.CgroupParent},
	}
	rt := nd.n.RuntimeClient()
	sandbox, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: config})
	if err != nil {
		return nil, fmt.Errorf("RunPodSandbox %s: %w", name, err)
	}
	containerLabels := map[string]string{labelContainerName: "app"}
	for k, v := range labels {
		containerLabels[k] = v
	}
	created, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId:  sandbox.GetPodSandboxId(),
		SandboxConfig: config,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
			Image:    &runtimeapi.ImageSpec{Image: nd.n.TestImage},
			Command:  []string{"sh", "-c", "echo started; exec sleep 3600"},
			LogPath:  "app/0.log",
			Labels:   containerLabels,
			Linux:    &runtimeapi.LinuxContainerConfig{},
		},
	})
	if err != nil {
		return nil, fmt.Errorf("CreateContainer %s: %w", name, err)
	}
	if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: created.GetContainerId()}); err != nil {
		return nil, fmt.Errorf("StartContainer %s: %w", name, err)
	}
	now := timestamppb.Now()
	pod.SandboxId, pod.StartTime = sandbox.GetPodSandboxId(), now
	pod.Containers = []*typesv1.Container{{Name: "app", Image: nd.n.TestImage, ContainerId: created.GetContainerId(), State: "running", StartedAt: now}}
	return pod, nil
}

// removeCgroups removes the benchmark's cgroup tree from every v1
// hierarchy, deepest first. containerd removes the containers' cgroups,
// not the parents it made for them.
func removeCgroups(b *testing.B, root string) {
	hierarchies, err := filepath.Glob("/sys/fs/cgroup/*")
	if err != nil {
		b.Error(err)
		return
	}
	for _, h := range hierarchies {
		var dirs []string
		_ = filepath.WalkDir(filepath.Join(h, root), func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			if err := os.Remove(dirs[i]); err != nil {
				b.Errorf("remove cgroup %s: %v", dirs[i], err)
			}
		}
	}
}
