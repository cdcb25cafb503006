//go:build e2e

package pleg_test

import (
	"bytes"
	"context"
	"errors"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/go-hclog"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/microlet/microlet/core/pods/pleg"
	"github.com/microlet/microlet/core/pods/podcache"
	"github.com/microlet/microlet/core/runtime/container"
	"github.com/microlet/microlet/core/runtime/cri"
	"github.com/microlet/microlet/internal/devnode"
)

// e2eTimeout bounds each wait for the runtime.
const e2eTimeout = 90 * time.Second

// criRuntime is the least of a runtime manager PLEG needs, read straight
// from CRI: pods are grouped by their sandboxes' UIDs.
type criRuntime struct{ c *cri.Client }

func (r criRuntime) ListPods(ctx context.Context) ([]*container.Pod, error) {
	sandboxes, err := r.c.ListPodSandbox(ctx, nil)
	if err != nil {
		return nil, err
	}
	containers, err := r.c.ListContainers(ctx, nil)
	if err != nil {
		return nil, err
	}
	byUID := map[types.UID]*container.Pod{}
	bySandbox := map[string]*container.Pod{}
	var pods []*container.Pod
	for _, s := range sandboxes {
		uid := types.UID(s.GetMetadata().GetUid())
		p, ok := byUID[uid]
		if !ok {
			p = &container.Pod{UID: uid, Name: s.GetMetadata().GetName(), Namespace: s.GetMetadata().GetNamespace()}
			byUID[uid] = p
			pods = append(pods, p)
		}
		state := container.SandboxNotReady
		if s.GetState() == runtimeapi.PodSandboxState_SANDBOX_READY {
			state = container.SandboxReady
		}
		p.Sandboxes = append(p.Sandboxes, &container.Sandbox{ID: s.GetId(), State: state})
		bySandbox[s.GetId()] = p
	}
	for _, c := range containers {
		if p := bySandbox[c.GetPodSandboxId()]; p != nil {
			p.Containers = append(p.Containers, &container.Container{ID: c.GetId(), Name: c.GetMetadata().GetName(), SandboxID: c.GetPodSandboxId(), State: container.StateFromCRI(c.GetState())})
		}
	}
	return pods, nil
}

func (r criRuntime) GetPodStatus(ctx context.Context, uid types.UID, name, namespace string) (*container.PodStatus, error) {
	at := time.Now()
	pods, err := r.ListPods(ctx)
	if err != nil {
		return nil, err
	}
	for _, p := range pods {
		if p.UID == uid {
			return r.ListedPodStatus(ctx, p, at)
		}
	}
	return &container.PodStatus{UID: uid, Name: name, Namespace: namespace, Timestamp: at}, nil
}

func (r criRuntime) ListedPodStatus(ctx context.Context, listed *container.Pod, listedAt time.Time) (*container.PodStatus, error) {
	status := &container.PodStatus{UID: listed.UID, Name: listed.Name, Namespace: listed.Namespace, Timestamp: listedAt}
	for _, s := range listed.Sandboxes {
		status.Sandboxes = append(status.Sandboxes, &container.SandboxStatus{ID: s.ID, State: s.State})
	}
	for _, c := range listed.Containers {
		resp, err := r.c.ContainerStatus(ctx, c.ID, false)
		if err != nil {
			return nil, err
		}
		s := resp.GetStatus()
		status.Containers = append(status.Containers, &container.ContainerStatus{
			ID: c.ID, Name: c.Name, SandboxID: c.SandboxID, State: container.StateFromCRI(s.GetState()), ExitCode: s.GetExitCode(), Reason: s.GetReason(),
		})
	}
	return status, nil
}

// unusedGenerator fails the test if PLEG ever takes a status from an event:
// containerd 1.6 has no event stream.
type unusedGenerator struct{ t *testing.T }

func (g unusedGenerator) GeneratePodStatus(*runtimeapi.ContainerEventResponse) (*container.PodStatus, error) {
	g.t.Error("a status was generated from a container event on a runtime without events")
	return nil, errors.New("unexpected")
}

type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestRelistAgainstContainerd runs PLEG on a private containerd 1.6: it
// must detect that container events are not streamed, say so once, and
// relist: a container's start, death and removal and the pod's removal
// arrive as events, with the cache following.
func TestRelistAgainstContainerd(t *testing.T) {
	node := devnode.StartT(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*e2eTimeout)
	defer cancel()
	client, err := cri.Connect(ctx, cri.Config{RuntimeEndpoint: node.Endpoint}, hclog.NewNullLogger())
	if err != nil {
		t.Fatalf("connecting to containerd: %v", err)
	}
	t.Cleanup(func() { client.Close() })

	logs := &syncBuffer{}
	cache := podcache.New()
	p, err := pleg.New(pleg.Config{
		Runtime:     criRuntime{client},
		Cache:       cache,
		Events:      pleg.NewCRIEventSource(client),
		EventStatus: unusedGenerator{t},
		Log:         hclog.New(&hclog.LoggerOptions{Output: logs, Level: hclog.Info}),
	})
	if err != nil {
		t.Fatal(err)
	}
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(runCtx)
	}()
	t.Cleanup(func() {
		stop()
		<-done
	})

	const uid = "pleg-e2e-uid"
	sandboxConfig := &runtimeapi.PodSandboxConfig{
		Metadata:     &runtimeapi.PodSandboxMetadata{Name: "pleg-e2e", Uid: uid, Namespace: "default"},
		Hostname:     "pleg-e2e",
		LogDirectory: filepath.Join(node.Dir, "pod-logs", "pleg-e2e"),
		Linux:        &runtimeapi.LinuxPodSandboxConfig{},
	}
	sandboxID, err := client.RunPodSandbox(ctx, sandboxConfig, "")
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	t.Cleanup(func() {
		cleanup, cancel := context.WithTimeout(context.Background(), e2eTimeout)
		defer cancel()
		_ = client.StopPodSandbox(cleanup, sandboxID)
		_ = client.RemovePodSandbox(cleanup, sandboxID)
	})
	containerID, err := client.CreateContainer(ctx, sandboxID, &runtimeapi.ContainerConfig{
		Metadata: &runtimeapi.ContainerMetadata{Name: "sleeper"},
		Image:    &runtimeapi.ImageSpec{Image: node.TestImage},
		Command:  []string{"sleep", "3600"},
		LogPath:  "sleeper.log",
		Linux:    &runtimeapi.LinuxContainerConfig{},
	}, sandboxConfig)
	if err != nil {
		t.Fatalf("CreateContainer: %v", err)
	}
	if err := client.StartContainer(ctx, containerID); err != nil {
		t.Fatalf("StartContainer: %v", err)
	}

	waitFor := func(want pleg.PodLifecycleEventType, id string) {
		t.Helper()
		timeout := time.After(e2eTimeout)
		for {
			select {
			case e := <-p.Watch():
				if e.ID == uid && e.Type == want && e.Data == id {
					return
				}
			case <-timeout:
				t.Fatalf("no %s event for %s", want, id)
			}
		}
	}
	waitFor(pleg.ContainerStarted, containerID)
	if s, err := cache.Get(uid); err != nil || s.Container("sleeper") == nil || s.Container("sleeper").State != container.StateRunning {
		t.Errorf("cache after the start: %+v, %v", s, err)
	}
	if p.Evented() {
		t.Error("PLEG uses container events on containerd 1.6")
	}
	if n := strings.Count(logs.String(), "does not stream container events"); n != 1 {
		t.Errorf("%d log lines about the missing event stream; want exactly 1:\n%s", n, logs.String())
	}
	if ok, err := p.Healthy(); !ok {
		t.Errorf("unhealthy while relisting: %v", err)
	}

	if err := client.StopContainer(ctx, containerID, 0); err != nil {
		t.Fatalf("StopContainer: %v", err)
	}
	waitFor(pleg.ContainerDied, containerID)
	if err := client.RemoveContainer(ctx, containerID); err != nil {
		t.Fatalf("RemoveContainer: %v", err)
	}
	waitFor(pleg.ContainerRemoved, containerID)
	if err := client.StopPodSandbox(ctx, sandboxID); err != nil {
		t.Fatalf("StopPodSandbox: %v", err)
	}
	waitFor(pleg.ContainerDied, sandboxID)
	if err := client.RemovePodSandbox(ctx, sandboxID); err != nil {
		t.Fatalf("RemovePodSandbox: %v", err)
	}
	waitFor(pleg.ContainerRemoved, sandboxID)
	if s, _ := cache.Get(uid); len(s.Sandboxes) != 0 || len(s.Containers) != 0 {
		t.Errorf("the removed pod is still cached: %+v", s)
	}
}
