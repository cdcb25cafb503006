//go:build e2e

package nodebench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"sigs.k8s.io/yaml"
)

const (
	// namespace holds every benchmark pod.
	namespace = "bench"
	// containerName is the pods' one container.
	containerName = "pause"
	// pollInterval is how often the benchmark lists running containers.
	pollInterval = 10 * time.Millisecond
	// measureTimeout bounds one start or stop.
	measureTimeout = 3 * time.Minute
)

// benchPod is one pod of a batch. Every batch has names of its own, so
// that a pod never reuses the name (and, for static pods, the UID) of a
// pod of an earlier batch that an agent may still be finishing.
type benchPod struct {
	name string
}

// newBatch names count pods for the run-th measurement of its size.
func newBatch(count, run int) []benchPod {
	pods := make([]benchPod, count)
	for i := range pods {
		pods[i] = benchPod{name: fmt.Sprintf("pause-n%d-r%d-%02d", count, run, i)}
	}
	return pods
}

// manifest is the pod the upstream density tests run: one container of
// the pause image, on the pod network, no resources (BestEffort).
func manifest(pod benchPod, image string) ([]byte, error) {
	return yaml.Marshal(&v1.Pod{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{Name: pod.name, Namespace: namespace},
		Spec: v1.PodSpec{
			Containers: []v1.Container{{Name: containerName, Image: image, ImagePullPolicy: v1.PullIfNotPresent}},
		},
	})
}

// manifestDir is a static pod directory that an agent watches.
type manifestDir struct {
	dir   string
	image string
}

// starter renders every manifest, then returns the timed action: put them
// in place one after the other, each by rename so that an agent never
// reads half a file.
func (m manifestDir) starter(pods []benchPod) (func() <-chan error, error) {
	data := make([][]byte, len(pods))
	for i, pod := range pods {
		var err error
		if data[i], err = manifest(pod, m.image); err != nil {
			return nil, err
		}
	}
	return func() <-chan error {
		for i, pod := range pods {
			tmp := filepath.Join(m.dir, "."+pod.name+".yaml")
			if err := os.WriteFile(tmp, data[i], 0o644); err != nil {
				return finished(err)
			}
			if err := os.Rename(tmp, m.path(pod)); err != nil {
				return finished(err)
			}
		}
		return finished(nil)
	}, nil
}

// stopper returns the timed action: remove every manifest of the batch.
func (m manifestDir) stopper(pods []benchPod) (func() <-chan error, error) {
	return func() <-chan error {
		var errs []error
		for _, pod := range pods {
			errs = append(errs, os.Remove(m.path(pod)))
		}
		return finished(errors.Join(errs...))
	}, nil
}

func (m manifestDir) path(pod benchPod) string { return filepath.Join(m.dir, pod.name+".yaml") }

// runningContainers counts the node's running containers (sandboxes are
// not containers in the CRI's listing).
func runningContainers(ctx context.Context, rt runtimeapi.RuntimeServiceClient) (int, error) {
	return countContainers(ctx, rt, &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING})
}

// readySandboxes counts the node's ready pod sandboxes.
func readySandboxes(ctx context.Context, rt runtimeapi.RuntimeServiceClient) (int, error) {
	return countSandboxes(ctx, rt, &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY})
}

// leftovers counts the node's containers and sandboxes in every state: what
// earlier batches left until the agent's garbage collection removes it,
// which every list call of a start then converts again.
func leftovers(ctx context.Context, rt runtimeapi.RuntimeServiceClient) (containers, sandboxes int, err error) {
	if containers, err = countContainers(ctx, rt, nil); err != nil {
		return 0, 0, err
	}
	if sandboxes, err = countSandboxes(ctx, rt, nil); err != nil {
		return 0, 0, err
	}
	return containers, sandboxes, nil
}

// countContainers counts the node's containers in state, or in any state
// when state is nil.
func countContainers(ctx context.Context, rt runtimeapi.RuntimeServiceClient, state *runtimeapi.ContainerStateValue) (int, error) {
	resp, err := rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{State: state}})
	if err != nil {
		return 0, fmt.Errorf("list containers: %w", err)
	}
	return len(resp.GetContainers()), nil
}

// countSandboxes counts the node's sandboxes in state, or in any state
// when state is nil.
func countSandboxes(ctx context.Context, rt runtimeapi.RuntimeServiceClient, state *runtimeapi.PodSandboxStateValue) (int, error) {
	resp, err := rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{State: state}})
	if err != nil {
		return 0, fmt.Errorf("list sandboxes: %w", err)
	}
	return len(resp.GetItems()), nil
}

// timeUntil starts the clock, runs act and polls the running containers
// every pollInterval until want of them run. act's channel reports the
// errors of work it left running and is closed when that work is done;
// timeUntil waits for it after stopping the clock.
func timeUntil(ctx context.Context, rt runtimeapi.RuntimeServiceClient, want int, act func() <-chan error) (time.Duration, error) {
	ctx, cancel := context.WithTimeout(ctx, measureTimeout)
	defer cancel()
	start := time.Now()
	errs := act()
	running := -1
	for {
		var err error
		if running, err = runningContainers(ctx, rt); err != nil {
			return 0, err
		}
		if running == want {
			took := time.Since(start)
			return took, drain(ctx, errs)
		}
		select {
		case err, open := <-errs:
			if err != nil {
				return 0, err
			}
			if !open {
				errs = nil
			}
		case <-ctx.Done():
			return 0, fmt.Errorf("%d containers running after %v, want %d", running, time.Since(start).Round(time.Millisecond), want)
		case <-time.After(pollInterval):
		}
	}
}

// drain waits until errs is closed and returns the first error on it.
func drain(ctx context.Context, errs <-chan error) error {
	var first error
	for errs != nil {
		select {
		case err, open := <-errs:
			if !open {
				return first
			}
			if first == nil {
				first = err
			}
		case <-ctx.Done():
			return fmt.Errorf("work after the measurement did not finish: %w", ctx.Err())
		}
	}
	return first
}

// waitNoPods polls until the node has no running container and no ready
// sandbox: the agent has stopped every pod.
func waitNoPods(ctx context.Context, rt runtimeapi.RuntimeServiceClient) error {
	ctx, cancel := context.WithTimeout(ctx, measureTimeout)
	defer cancel()
	for {
		containers, err := runningContainers(ctx, rt)
		if err != nil {
			return err
		}
		sandboxes, err := readySandboxes(ctx, rt)
		if err != nil {
			return err
		}
		if containers == 0 && sandboxes == 0 {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d containers and %d sandboxes still run: %w", containers, sandboxes, ctx.Err())
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// finished is the channel of an action that left nothing running: closed,
// holding err if there was one.
func finished(err error) <-chan error {
	ch := make(chan error, 1)
	if err != nil {
		ch <- err
	}
	close(ch)
	return ch
}

// median of a few samples.
func median(samples []time.Duration) time.Duration {
	sorted := slices.Clone(samples)
	slices.Sort(sorted)
	return sorted[len(sorted)/2]
}
