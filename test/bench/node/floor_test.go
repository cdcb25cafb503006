//go:build e2e

package nodebench

import (
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/internal/devnode"
)

// Labels the agents set on sandboxes and containers (k8s.io/kubelet/pkg/types).
const (
	labelPodName       = "io.kubernetes.pod.name"
	labelPodNamespace  = "io.kubernetes.pod.namespace"
	labelPodUID        = "io.kubernetes.pod.uid"
	labelContainerName = "io.kubernetes.container.name"
)

// stopTimeout is StopContainer's grace period, the pods' default
// terminationGracePeriodSeconds, as an agent passes it. The pause program
// exits at SIGTERM, so it is never waited out.
const stopTimeout = 30

// floor is the raw CRI floor: the benchmark itself makes each pod's
// sandbox and container through the CRI, every pod in parallel, with the
// settings that cost the runtime work which every agent gives them (name,
// labels, log directory, a pod cgroup under a private root, the sandbox's
// RuntimeDefault seccomp profile, a termination-log mount and BestEffort
// resources), and stops and removes them the same way. No agent runs.
//
// The kubelet forces RuntimeDefault seccomp on every sandbox (upstream
// kuberuntime_sandbox.go, kubernetes#84623), and microlet does too; runc
// compiles and loads that filter for each pause container, about 20 ms of
// CPU a pod here. A floor without it started 10 pods about 0.2 s sooner
// than the same floor with it: an agent could never reach it.
type floor struct {
	node *devnode.Node
	// logs holds the pods' log directories, pods their termination-log
	// files; cgroupRoot their cgroups.
	logs, pods, cgroupRoot string

	mu   sync.Mutex
	made map[string]floorPod // by pod name
}

// floorPod is what the floor made for one pod.
type floorPod struct {
	sandboxID, containerID string
}

func startFloor(b *testing.B) system {
	cgroupRoot := fmt.Sprintf("/microlet-bench-node-%d-floor", os.Getpid())
	// Registered before the node's cleanup, so it runs after the node's
	// Close has removed the sandboxes and their cgroups are empty.
	b.Cleanup(func() {
		if err := devnode.RemoveCgroup(cgroupRoot); err != nil {
			b.Errorf("floor: %v", err)
		}
	})
	n := devnode.StartT(b)
	return &floor{node: n, logs: filepath.Join(n.Dir, "pod-logs"), pods: filepath.Join(n.Dir, "pods"), cgroupRoot: cgroupRoot, made: map[string]floorPod{}}
}

func (f *floor) devnode() *devnode.Node { return f.node }

// processes: the floor has no agent.
func (f *floor) processes() ([]int, error) { return nil, nil }

// starter returns the timed action: one goroutine per pod runs its sandbox,
// creates and starts its container.
func (f *floor) starter(pods []benchPod) (func() <-chan error, error) {
	return f.parallel(pods, f.run), nil
}

// stopper returns the timed action: one goroutine per pod stops its
// container, then stops and removes its sandbox (which removes the
// container), as an agent does for a deleted pod.
func (f *floor) stopper(pods []benchPod) (func() <-chan error, error) {
	return f.parallel(pods, f.remove), nil
}

// parallel returns an action that runs do for every pod at once; its
// channel gets their errors and is closed when all are done.
func (f *floor) parallel(pods []benchPod, do func(context.Context, benchPod) error) func() <-chan error {
	return func() <-chan error {
		errs := make(chan error, len(pods))
		var wg sync.WaitGroup
		for _, pod := range pods {
			wg.Go(func() {
				ctx, cancel := context.WithTimeout(context.Background(), measureTimeout)
				defer cancel()
				if err := do(ctx, pod); err != nil {
					errs <- fmt.Errorf("floor: pod %s: %w", pod.name, err)
				}
			})
		}
		go func() {
			wg.Wait()
			close(errs)
		}()
		return errs
	}
}

func (f *floor) run(ctx context.Context, pod benchPod) error {
	uid := podUID(pod)
	labels := map[string]string{labelPodName: pod.name, labelPodNamespace: namespace, labelPodUID: uid}
	config := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: pod.name, Uid: uid, Namespace: namespace},
		Hostname:     pod.name,
		LogDirectory: filepath.Join(f.logs, namespace+"_"+pod.name+"_"+uid),
		Labels:       labels,
		Linux: &runtimeapi.LinuxPodSandboxConfig{
			CgroupParent: f.cgroupRoot + "/kubepods/besteffort/pod" + uid,
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
				Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
			},
		},
	}
	if err := os.MkdirAll(config.LogDirectory, 0o755); err != nil {
		return err
	}
	terminationLog := filepath.Join(f.pods, uid, "termination-log")
	if err := os.MkdirAll(filepath.Dir(terminationLog), 0o750); err != nil {
		return err
	}
	if err := os.WriteFile(terminationLog, nil, 0o660); err != nil {
		return err
	}
	rt := f.node.RuntimeClient()
	sandbox, err := rt.RunPodSandbox(ctx, &runtimeapi.RunPodSandboxRequest{Config: config})
	if err != nil {
		return fmt.Errorf("RunPodSandbox: %w", err)
	}
	containerLabels := map[string]string{labelContainerName: containerName}
	for k, v := range labels {
		containerLabels[k] = v
	}
	created, err := rt.CreateContainer(ctx, &runtimeapi.CreateContainerRequest{
		PodSandboxId:  sandbox.GetPodSandboxId(),
		SandboxConfig: config,
		Config: &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: containerName},
			Image:    &runtimeapi.ImageSpec{Image: f.node.PauseImage},
			LogPath:  containerName + "/0.log",
			Labels:   containerLabels,
			Mounts:   []*runtimeapi.Mount{{ContainerPath: "/dev/termination-log", HostPath: terminationLog}},
			Linux: &runtimeapi.LinuxContainerConfig{
				// BestEffort, as upstream's QoS rules give a pod without
				// requests.
				Resources: &runtimeapi.LinuxContainerResources{CpuShares: 2, CpuPeriod: 100000, OomScoreAdj: 1000},
			},
		},
	})
	if err != nil {
		return fmt.Errorf("CreateContainer: %w", err)
	}
	f.mu.Lock()
	f.made[pod.name] = floorPod{sandboxID: sandbox.GetPodSandboxId(), containerID: created.GetContainerId()}
	f.mu.Unlock()
	if _, err := rt.StartContainer(ctx, &runtimeapi.StartContainerRequest{ContainerId: created.GetContainerId()}); err != nil {
		return fmt.Errorf("StartContainer: %w", err)
	}
	return nil
}

func (f *floor) remove(ctx context.Context, pod benchPod) error {
	f.mu.Lock()
	made, ok := f.made[pod.name]
	delete(f.made, pod.name)
	f.mu.Unlock()
	if !ok {
		return fmt.Errorf("the floor made no pod %s", pod.name)
	}
	rt := f.node.RuntimeClient()
	if _, err := rt.StopContainer(ctx, &runtimeapi.StopContainerRequest{ContainerId: made.containerID, Timeout: stopTimeout}); err != nil {
		return fmt.Errorf("StopContainer: %w", err)
	}
	if _, err := rt.StopPodSandbox(ctx, &runtimeapi.StopPodSandboxRequest{PodSandboxId: made.sandboxID}); err != nil {
		return fmt.Errorf("StopPodSandbox: %w", err)
	}
	if _, err := rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: made.sandboxID}); err != nil {
		return fmt.Errorf("RemovePodSandbox: %w", err)
	}
	return nil
}

// podUID is a UID of UUID form that no other pod of the run has: batches
// never reuse a name.
func podUID(pod benchPod) string {
	h := sha256.Sum256([]byte(pod.name))
	return fmt.Sprintf("%x-%x-%x-%x-%x", h[0:4], h[4:6], h[6:8], h[8:10], h[10:16])
}
