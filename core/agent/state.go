package agent

import (
	"context"
	"runtime"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	v1 "k8s.io/api/core/v1"

	"github.com/microlet/microlet/core/pods/podview"
	"github.com/microlet/microlet/core/runtime/cri"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
)

// state is the core's pods and node as plugins see them (the host
// service). The plugin host exists before the pod machinery, but plugins
// launch only after it, so the machinery is looked up at call time.
type state struct{ a *Agent }

// PodViews are the active pods with their status and runtime view.
func (s state) PodViews() []*typesv1.Pod {
	p := s.a.pods
	if p == nil {
		return nil
	}
	active := p.loop.ActivePods()
	out := make([]*typesv1.Pod, 0, len(active))
	for _, pod := range active {
		out = append(out, p.podView(pod))
	}
	return out
}

func (p *pods) podView(pod *v1.Pod) *typesv1.Pod {
	apiStatus, _ := p.statuses.GetPodStatus(pod.UID)
	rs, _ := p.cache.Get(pod.UID)
	extra := podview.Extra{}
	if cgroup, qos, ok := p.cgroups.PodCgroup(pod.UID); ok {
		extra.CgroupParent, extra.QOSClass = cgroup, qos
	}
	return podview.Pod(pod, &apiStatus, rs, extra, p.runtime)
}

// NodeView is the node: its capacity, allocatable and labels.
func (s state) NodeView() *typesv1.Node {
	cfg, p := s.a.cfg, s.a.pods
	if p == nil {
		return &typesv1.Node{Name: cfg.NodeName}
	}
	// Device plugins' extended resources join the machine's, as upstream's
	// node status setters add the device manager's capacity.
	capacity := p.capacity.ResourceList()
	for name, q := range p.devices.Capacity() {
		capacity.Other[string(name)] = q.Value()
	}
	allocatable := p.cgroups.Allocatable()
	for name, q := range p.devices.Allocatable() {
		allocatable[name] = q
	}
	return &typesv1.Node{
		Name:          cfg.NodeName,
		Labels:        nodeLabels(cfg.NodeName),
		Capacity:      capacity,
		Allocatable:   podview.ResourceList(allocatable),
		Conditions:    append(p.conditions(), p.eviction.Conditions()...),
		CgroupDriver:  cfg.CgroupDriver,
		CgroupVersion: int32(p.cgroupTree.Version()),
		RootDir:       cfg.RootDir,
		PodLogsDir:    cfg.PodLogsDir,
		PodsCgroup:    p.cgroups.PodsCgroup(),
	}
}

// nodeLabels are the labels the kubelet puts on its Node (initialNode).
func nodeLabels(name string) map[string]string {
	return map[string]string{
		v1.LabelHostname:   name,
		v1.LabelOSStable:   runtime.GOOS,
		v1.LabelArchStable: runtime.GOARCH,
	}
}

// runtimeCalls are the runtime calls of the host service, on the CRI client
// the pod machinery connected.
type runtimeCalls struct{ a *Agent }

func (r runtimeCalls) client() (*cri.Client, error) {
	if r.a.pods == nil {
		return nil, status.Error(codes.Unavailable, "the core is still starting")
	}
	return r.a.pods.cri, nil
}

func (r runtimeCalls) ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (*runtimeapi.ExecSyncResponse, error) {
	c, err := r.client()
	if err != nil {
		return nil, err
	}
	return c.ExecSync(ctx, id, cmd, timeout)
}

func (r runtimeCalls) ListContainerStats(ctx context.Context, f *runtimeapi.ContainerStatsFilter) ([]*runtimeapi.ContainerStats, error) {
	c, err := r.client()
	if err != nil {
		return nil, err
	}
	return c.ListContainerStats(ctx, f)
}

func (r runtimeCalls) ListPodSandboxStats(ctx context.Context, f *runtimeapi.PodSandboxStatsFilter) ([]*runtimeapi.PodSandboxStats, error) {
	c, err := r.client()
	if err != nil {
		return nil, err
	}
	return c.ListPodSandboxStats(ctx, f)
}

func (r runtimeCalls) ImageFsInfo(ctx context.Context) (*runtimeapi.ImageFsInfoResponse, error) {
	c, err := r.client()
	if err != nil {
		return nil, err
	}
	return c.ImageFsInfo(ctx)
}
