package sdk_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"

	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/sdktest"
)

type planner struct{ configurable }

func (planner) PlanPod(_ context.Context, req *cgroupv1.PlanPodRequest) (*cgroupv1.PlanPodResponse, error) {
	if req.GetPod().GetUid() == "" {
		return nil, errors.New("a pod without a UID")
	}
	return &cgroupv1.PlanPodResponse{QosClass: "BestEffort", CgroupParent: "/kubepods/besteffort/pod" + req.GetPod().GetUid()}, nil
}

func (planner) PlanNode(_ context.Context, req *cgroupv1.PlanNodeRequest) (*cgroupv1.PlanNodeResponse, error) {
	return &cgroupv1.PlanNodeResponse{Allocatable: req.GetNode().GetCapacity()}, nil
}

type admittingPlanner struct{ planner }

func (admittingPlanner) Admit(_ context.Context, req *cgroupv1.AdmitRequest) (*cgroupv1.AdmitResponse, error) {
	if len(req.GetAdmittedPods()) >= 1 {
		return &cgroupv1.AdmitResponse{Reason: "OutOfpods"}, nil
	}
	return &cgroupv1.AdmitResponse{Admit: true}, nil
}

func TestCgroup(t *testing.T) {
	h := sdktest.InProcess(t, info(sdk.KindCgroup), planner{})
	if caps := h.Capabilities(); len(caps) != 0 {
		t.Errorf("capabilities %v, want none", caps)
	}
	mustConfigure(t, h)
	pod, err := h.Cgroup().PlanPod(t.Context(), &cgroupv1.PlanPodRequest{Pod: &typesv1.Pod{Uid: "u1"}})
	if err != nil || pod.GetCgroupParent() != "/kubepods/besteffort/podu1" {
		t.Errorf("PlanPod = %v, %v", pod, err)
	}
	_, err = h.Cgroup().PlanPod(t.Context(), &cgroupv1.PlanPodRequest{Pod: &typesv1.Pod{}})
	wantCode(t, "PlanPod returning a plain error", err, codes.Unknown)
	pods := int64(110)
	node, err := h.Cgroup().PlanNode(t.Context(), &cgroupv1.PlanNodeRequest{Node: &typesv1.Node{Capacity: &typesv1.ResourceList{Pids: &pods}}})
	if err != nil || node.GetAllocatable().GetPids() != 110 {
		t.Errorf("PlanNode = %v, %v", node, err)
	}
	_, err = h.Cgroup().Admit(t.Context(), &cgroupv1.AdmitRequest{})
	wantCode(t, "Admit without sdk.CgroupAdmitter", err, codes.Unimplemented)
}

func TestCgroupAdmit(t *testing.T) {
	h := sdktest.InProcess(t, info(sdk.KindCgroup), admittingPlanner{})
	if caps := h.Capabilities(); !slices.Equal(caps, []string{sdk.CapabilityCgroupAdmit}) {
		t.Errorf("capabilities %v", caps)
	}
	mustConfigure(t, h)
	resp, err := h.Cgroup().Admit(t.Context(), &cgroupv1.AdmitRequest{AdmittedPods: []*typesv1.Pod{{}}})
	if err != nil || resp.GetAdmit() || resp.GetReason() != "OutOfpods" {
		t.Errorf("Admit = %v, %v", resp, err)
	}
}
