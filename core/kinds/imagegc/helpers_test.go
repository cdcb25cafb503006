package imagegc

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	kubelettypes "k8s.io/kubelet/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/microlet/microlet/core/pluginhost"
	"github.com/microlet/microlet/plugins/imagegc/lru"
	imagegcv1 "github.com/microlet/microlet/proto/microlet/imagegc/v1"
	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/sdktest"
)

// epoch is the fake clock's start.
var epoch = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// fakeRuntime is a CRI runtime in memory that records what GC removes.
type fakeRuntime struct {
	containers   []*runtimeapi.Container
	sandboxes    []*runtimeapi.PodSandbox
	images       []*runtimeapi.Image
	logPaths     map[string]string // container ID -> log path
	imageFsMount string
	sandboxImage string

	removedContainers, stoppedSandboxes, removedSandboxes, removedImages []string
}

func (r *fakeRuntime) ListContainers(context.Context, *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	return slices.Clone(r.containers), nil
}

func (r *fakeRuntime) ContainerStatus(_ context.Context, id string, _ bool) (*runtimeapi.ContainerStatusResponse, error) {
	return &runtimeapi.ContainerStatusResponse{Status: &runtimeapi.ContainerStatus{Id: id, LogPath: r.logPaths[id]}}, nil
}

func (r *fakeRuntime) RemoveContainer(_ context.Context, id string) error {
	r.removedContainers = append(r.removedContainers, id)
	r.containers = slices.DeleteFunc(r.containers, func(c *runtimeapi.Container) bool { return c.Id == id })
	return nil
}

func (r *fakeRuntime) ListPodSandbox(context.Context, *runtimeapi.PodSandboxFilter) ([]*runtimeapi.PodSandbox, error) {
	return slices.Clone(r.sandboxes), nil
}

func (r *fakeRuntime) StopPodSandbox(_ context.Context, id string) error {
	r.stoppedSandboxes = append(r.stoppedSandboxes, id)
	return nil
}

func (r *fakeRuntime) RemovePodSandbox(_ context.Context, id string) error {
	if !slices.Contains(r.stoppedSandboxes, id) {
		return fmt.Errorf("sandbox %s removed before it was stopped", id)
	}
	r.removedSandboxes = append(r.removedSandboxes, id)
	r.sandboxes = slices.DeleteFunc(r.sandboxes, func(s *runtimeapi.PodSandbox) bool { return s.Id == id })
	return nil
}

func (r *fakeRuntime) ListImages(context.Context, *runtimeapi.ImageFilter) ([]*runtimeapi.Image, error) {
	return slices.Clone(r.images), nil
}

func (r *fakeRuntime) RemoveImage(_ context.Context, spec *runtimeapi.ImageSpec) error {
	r.removedImages = append(r.removedImages, spec.Image)
	r.images = slices.DeleteFunc(r.images, func(i *runtimeapi.Image) bool { return i.Id == spec.Image })
	return nil
}

func (r *fakeRuntime) ImageFsInfo(context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	var used uint64
	for _, img := range r.images {
		used += img.Size
	}
	return &runtimeapi.ImageFsInfoResponse{ImageFilesystems: []*runtimeapi.FilesystemUsage{{
		Timestamp:  epoch.UnixNano(),
		FsId:       &runtimeapi.FilesystemIdentifier{Mountpoint: r.imageFsMount},
		UsedBytes:  &runtimeapi.UInt64Value{Value: used},
		InodesUsed: &runtimeapi.UInt64Value{Value: uint64(len(r.images))},
	}}}, nil
}

func (r *fakeRuntime) Status(context.Context, bool) (*runtimeapi.StatusResponse, error) {
	return &runtimeapi.StatusResponse{Info: map[string]string{"config": fmt.Sprintf(`{"sandboxImage":%q}`, r.sandboxImage)}}, nil
}

// podLabels are the labels the core puts on a pod's sandboxes and containers.
func podLabels(uid, name, container string) map[string]string {
	l := map[string]string{
		kubelettypes.KubernetesPodUIDLabel:       uid,
		kubelettypes.KubernetesPodNameLabel:      name,
		kubelettypes.KubernetesPodNamespaceLabel: "default",
	}
	if container != "" {
		l[kubelettypes.KubernetesContainerNameLabel] = container
	}
	return l
}

func container(id, sandbox, uid, name string, state runtimeapi.ContainerState, created time.Time, image string) *runtimeapi.Container {
	return &runtimeapi.Container{
		Id: id, PodSandboxId: sandbox, State: state, CreatedAt: created.UnixNano(),
		Labels:   podLabels(uid, "pod-"+uid, name),
		Image:    &runtimeapi.ImageSpec{Image: image},
		ImageRef: image,
		Metadata: &runtimeapi.ContainerMetadata{Name: name},
	}
}

func sandbox(id, uid string, state runtimeapi.PodSandboxState, created time.Time) *runtimeapi.PodSandbox {
	return &runtimeapi.PodSandbox{
		Id: id, State: state, CreatedAt: created.UnixNano(),
		Labels:   podLabels(uid, "pod-"+uid, ""),
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "pod-" + uid, Namespace: "default", Uid: uid},
	}
}

func image(id, tag string, size uint64) *runtimeapi.Image {
	return &runtimeapi.Image{Id: id, RepoTags: []string{tag}, Size: size}
}

// deletedPods is the pod state: the UIDs listed are deleted.
type deletedPods []string

func (d deletedPods) PodDeleted(uid types.UID) bool { return slices.Contains(d, string(uid)) }

// clientPlugin reaches a plugin served in the test.
type clientPlugin struct {
	client imagegcv1.ImageGCServiceClient
}

func (p clientPlugin) Call(ctx context.Context, fn func(context.Context, pluginhost.Conn[imagegcv1.ImageGCServiceClient]) error) error {
	return fn(ctx, pluginhost.Conn[imagegcv1.ImageGCServiceClient]{Client: p.client})
}

// lruPlugin serves the real imagegc plugin in the test with config.
func lruPlugin(t *testing.T, config map[string]any) Plugin {
	t.Helper()
	h := sdktest.InProcess[lru.Config](t, sdk.Info{Kind: sdk.KindImageGC, Name: "lru", Version: "test"}, &lru.Plugin{})
	if err := h.Configure(config); err != nil {
		t.Fatalf("configuring the lru plugin: %v", err)
	}
	return clientPlugin{h.ImageGC()}
}

// fixedPlan is an imagegc plugin that answers every container GC with one
// plan, whatever it is sent.
type fixedPlan struct {
	plan *imagegcv1.PlanContainerGCResponse
}

func (f *fixedPlan) Configure(context.Context, *struct{}, *sdk.Host) error { return nil }

func (f *fixedPlan) PlanContainerGC(context.Context, *imagegcv1.ContainerGCContext, []*imagegcv1.DeadContainer, []*imagegcv1.Sandbox) (*imagegcv1.PlanContainerGCResponse, error) {
	return f.plan, nil
}

func fixedPlanPlugin(t *testing.T, plan *imagegcv1.PlanContainerGCResponse) Plugin {
	t.Helper()
	h := sdktest.InProcess[struct{}](t, sdk.Info{Kind: sdk.KindImageGC, Name: "fixed", Version: "test"}, &fixedPlan{plan: plan})
	if err := h.Configure(nil); err != nil {
		t.Fatal(err)
	}
	return clientPlugin{h.ImageGC()}
}

// downPlugin is a plugin that does not serve.
type downPlugin struct{ err error }

func (d downPlugin) Call(context.Context, func(context.Context, pluginhost.Conn[imagegcv1.ImageGCServiceClient]) error) error {
	return d.err
}

func newManager(t *testing.T, rt *fakeRuntime, plugin Plugin, pods PodState, clock *clocktesting.FakePassiveClock, podLogs, containerLogs string) *Manager {
	t.Helper()
	m, err := New(Options{Runtime: rt, Plugin: plugin, Pods: pods, PodLogsDir: podLogs, ContainerLogsDir: containerLogs, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	return m
}
