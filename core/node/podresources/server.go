// Package podresources serves the kubelet's pod-resources API
// (k8s.io/kubelet/pkg/apis/podresources/v1: List, Get,
// GetAllocatableResources) on the kubelet's socket,
// <root_dir>/pod-resources/kubelet.sock, for monitoring agents (GPU and
// NIC exporters) that ask which devices, CPUs and memory each container
// holds.
package podresources

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net"
	"os"
	"path/filepath"
	"slices"

	"github.com/hashicorp/go-hclog"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	podresourcesv1 "k8s.io/kubelet/pkg/apis/podresources/v1"

	"github.com/microlet/microlet/sdk/nodefacts"
)

// The kubelet's rate limit of the API (pkg/kubelet/apis/podresources).
const (
	DefaultQPS         = 100
	DefaultBurstTokens = 10
)

// SocketPath is the kubelet's socket under its root dir.
func SocketPath(rootDir string) string {
	return filepath.Join(rootDir, "pod-resources", "kubelet.sock")
}

// Options are where the answers come from.
type Options struct {
	// ActivePods are the pods listed (the kubelet's
	// KubeletPodResourcesListUseActivePods, on by default); Pods every pod
	// the node has (the kubelet's pod manager), where Get looks a pod up:
	// one that has ended is still found. Nil Pods: ActivePods.
	ActivePods func() []*v1.Pod
	Pods       func() []*v1.Pod
	// ContainerDevices and HealthyDevices are the devices manager's:
	// device IDs by resource and NUMA node (NoNUMANode for none). Nil: no
	// devices.
	ContainerDevices func(uid types.UID, container string) map[string]map[int64][]string
	HealthyDevices   func() map[string]map[int64][]string
	NoNUMANode       int64
	// ContainerCPUs are a container's exclusive CPUs; AllocatableCPUs the
	// CPUs the CPU manager may hand out. Nil: none.
	ContainerCPUs   func(uid types.UID, container string) []int64
	AllocatableCPUs func() []int64
	// ContainerMemory is a container's memory the memory manager pinned to
	// NUMA nodes; AllocatableMemory what it may hand out, one block per
	// node and type. Nil: none.
	ContainerMemory   func(uid types.UID, container string) []nodefacts.MemoryBlock
	AllocatableMemory func() []nodefacts.MemoryBlock
	// Registerer gets the kubelet's pod_resources_endpoint_* counters;
	// nil: not exported.
	Registerer prometheus.Registerer
	Logger     hclog.Logger
}

type server struct {
	podresourcesv1.UnsafePodResourcesListerServer
	opts    Options
	metrics *metrics
}

// Serve listens on the socket (a stale one is replaced; the directory is
// created 0750 as the kubelet's) and serves until ctx ends, then removes
// the socket.
func Serve(ctx context.Context, path string, opts Options) error {
	if opts.Pods == nil {
		opts.Pods = opts.ActivePods
	}
	m, err := newMetrics(opts.Registerer)
	if err != nil {
		return fmt.Errorf("pod-resources: %w", err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return fmt.Errorf("pod-resources: %w", err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("pod-resources: remove the stale socket: %w", err)
	}
	l, err := net.Listen("unix", path)
	if err != nil {
		return fmt.Errorf("pod-resources: %w", err)
	}
	limiter := rate.NewLimiter(DefaultQPS, DefaultBurstTokens)
	srv := grpc.NewServer(grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
		if !limiter.Allow() {
			return nil, status.Error(codes.ResourceExhausted, "rejected by rate limit")
		}
		return h(ctx, req)
	}))
	podresourcesv1.RegisterPodResourcesListerServer(srv, &server{opts: opts, metrics: m})
	go func() {
		<-ctx.Done()
		srv.Stop()
	}()
	if opts.Logger != nil {
		opts.Logger.Info("serving the pod-resources API", "socket", path)
	}
	err = srv.Serve(l)
	os.Remove(path)
	if ctx.Err() != nil {
		return nil
	}
	return err
}

func (s *server) List(context.Context, *podresourcesv1.ListPodResourcesRequest) (*podresourcesv1.ListPodResourcesResponse, error) {
	s.metrics.request(s.metrics.list)
	resp := &podresourcesv1.ListPodResourcesResponse{}
	for _, pod := range s.opts.ActivePods() {
		resp.PodResources = append(resp.PodResources, s.podResources(pod))
	}
	return resp, nil
}

func (s *server) Get(_ context.Context, req *podresourcesv1.GetPodResourcesRequest) (*podresourcesv1.GetPodResourcesResponse, error) {
	s.metrics.request(s.metrics.get)
	pods := s.opts.Pods()
	i := slices.IndexFunc(pods, func(p *v1.Pod) bool {
		return p.Namespace == req.GetPodNamespace() && p.Name == req.GetPodName()
	})
	if i < 0 {
		// The kubelet's words, as a plain error (code Unknown) as it sends it.
		s.metrics.getErrors.WithLabelValues(apiVersion).Inc()
		return nil, fmt.Errorf("pod %s in namespace %s not found", req.GetPodName(), req.GetPodNamespace())
	}
	return &podresourcesv1.GetPodResourcesResponse{PodResources: s.podResources(pods[i])}, nil
}

func (s *server) GetAllocatableResources(context.Context, *podresourcesv1.AllocatableResourcesRequest) (*podresourcesv1.AllocatableResourcesResponse, error) {
	s.metrics.request(s.metrics.getAllocatable)
	resp := &podresourcesv1.AllocatableResourcesResponse{}
	if s.opts.HealthyDevices != nil {
		resp.Devices = s.devices(s.opts.HealthyDevices())
	}
	if s.opts.AllocatableCPUs != nil {
		resp.CpuIds = s.opts.AllocatableCPUs()
	}
	if s.opts.AllocatableMemory != nil {
		resp.Memory = memory(s.opts.AllocatableMemory())
	}
	return resp, nil
}

// podResources lists the sidecars and the containers, as the kubelet.
func (s *server) podResources(pod *v1.Pod) *podresourcesv1.PodResources {
	out := &podresourcesv1.PodResources{Name: pod.Name, Namespace: pod.Namespace}
	for _, c := range pod.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			out.Containers = append(out.Containers, s.container(pod.UID, c.Name))
		}
	}
	for _, c := range pod.Spec.Containers {
		out.Containers = append(out.Containers, s.container(pod.UID, c.Name))
	}
	return out
}

func (s *server) container(uid types.UID, name string) *podresourcesv1.ContainerResources {
	c := &podresourcesv1.ContainerResources{Name: name}
	if s.opts.ContainerDevices != nil {
		c.Devices = s.devices(s.opts.ContainerDevices(uid, name))
	}
	if s.opts.ContainerCPUs != nil {
		c.CpuIds = s.opts.ContainerCPUs(uid, name)
	}
	if s.opts.ContainerMemory != nil {
		c.Memory = memory(s.opts.ContainerMemory(uid, name))
	}
	return c
}

// memory is one entry per block, with its type, size and NUMA nodes, as
// the kubelet's containerMemoryFromBlock gives them.
func memory(blocks []nodefacts.MemoryBlock) []*podresourcesv1.ContainerMemory {
	var out []*podresourcesv1.ContainerMemory
	for _, b := range blocks {
		m := &podresourcesv1.ContainerMemory{MemoryType: b.Type, Size: b.Size, Topology: &podresourcesv1.TopologyInfo{Nodes: []*podresourcesv1.NUMANode{}}}
		for _, n := range b.NUMAAffinity {
			m.Topology.Nodes = append(m.Topology.Nodes, &podresourcesv1.NUMANode{ID: int64(n)})
		}
		out = append(out, m)
	}
	return out
}

// devices are one entry per resource and NUMA node, as the kubelet's
// devices provider gives them; devices on no NUMA node have no topology.
func (s *server) devices(byResource map[string]map[int64][]string) []*podresourcesv1.ContainerDevices {
	var out []*podresourcesv1.ContainerDevices
	for _, resource := range slices.Sorted(maps.Keys(byResource)) {
		for _, node := range slices.Sorted(maps.Keys(byResource[resource])) {
			d := &podresourcesv1.ContainerDevices{ResourceName: resource, DeviceIds: byResource[resource][node]}
			if node != s.opts.NoNUMANode {
				d.Topology = &podresourcesv1.TopologyInfo{Nodes: []*podresourcesv1.NUMANode{{ID: node}}}
			}
			out = append(out, d)
		}
	}
	return out
}
