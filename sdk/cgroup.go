package sdk

import (
	"context"

	"google.golang.org/grpc"

	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
)

// CgroupPlanner decides QoS classes, the cgroup layout and resource
// settings; the core applies them.
type CgroupPlanner interface {
	PlanPod(ctx context.Context, req *cgroupv1.PlanPodRequest) (*cgroupv1.PlanPodResponse, error)
	PlanNode(ctx context.Context, req *cgroupv1.PlanNodeRequest) (*cgroupv1.PlanNodeResponse, error)
}

// CgroupAdmitter is optional: it decides whether a new pod fits the node.
type CgroupAdmitter interface {
	Admit(ctx context.Context, req *cgroupv1.AdmitRequest) (*cgroupv1.AdmitResponse, error)
}

// CapabilityCgroupAdmit says the plugin implements CgroupAdmitter.
const CapabilityCgroupAdmit = "cgroup.admit"

// CPUAllocator is optional: the kubelet's resource managers at admission
// (topology, CPU and memory managers), deciding which containers get CPUs
// for themselves and on which NUMA nodes their memory goes. Without it
// the core runs the kubelet's "none" policies: every container gets every
// CPU and every NUMA node's memory.
type CPUAllocator interface {
	AllocateCPUs(ctx context.Context, req *cgroupv1.AllocateCPUsRequest) (*cgroupv1.AllocateCPUsResponse, error)
}

func adaptCgroup(impl any) (func(grpc.ServiceRegistrar), []string, error) {
	p, err := mustImplement[CgroupPlanner](impl, "sdk.CgroupPlanner (PlanPod, PlanNode)")
	if err != nil {
		return nil, nil, err
	}
	caps := capabilityIf[CgroupAdmitter](impl, CapabilityCgroupAdmit)
	return func(g grpc.ServiceRegistrar) { cgroupv1.RegisterCgroupServiceServer(g, &cgroupServer{impl: p}) }, caps, nil
}

type cgroupServer struct {
	cgroupv1.UnimplementedCgroupServiceServer
	impl CgroupPlanner
}

func (s *cgroupServer) PlanPod(ctx context.Context, req *cgroupv1.PlanPodRequest) (*cgroupv1.PlanPodResponse, error) {
	return call(s.impl.PlanPod(ctx, req))
}

func (s *cgroupServer) PlanNode(ctx context.Context, req *cgroupv1.PlanNodeRequest) (*cgroupv1.PlanNodeResponse, error) {
	return call(s.impl.PlanNode(ctx, req))
}

func (s *cgroupServer) Admit(ctx context.Context, req *cgroupv1.AdmitRequest) (*cgroupv1.AdmitResponse, error) {
	a, ok := s.impl.(CgroupAdmitter)
	if !ok {
		return nil, unsupported("Admit")
	}
	return call(a.Admit(ctx, req))
}

func (s *cgroupServer) AllocateCPUs(ctx context.Context, req *cgroupv1.AllocateCPUsRequest) (*cgroupv1.AllocateCPUsResponse, error) {
	a, ok := s.impl.(CPUAllocator)
	if !ok {
		return nil, unsupported("AllocateCPUs")
	}
	return call(a.AllocateCPUs(ctx, req))
}
