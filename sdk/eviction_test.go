package sdk_test

import (
	"context"
	"slices"
	"testing"

	"google.golang.org/grpc/codes"

	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk"
	"github.com/microlet/microlet/sdk/sdktest"
)

// fullStrategy implements every optional eviction interface.
type fullStrategy struct{ strategy }

func (fullStrategy) Admit(_ context.Context, req *evictionv1.AdmitRequest) (*evictionv1.AdmitResponse, error) {
	if req.GetPod().GetQosClass() == "BestEffort" {
		return &evictionv1.AdmitResponse{Reason: "Evicted", Message: "The node had condition: [MemoryPressure]. "}, nil
	}
	return &evictionv1.AdmitResponse{Admit: true}, nil
}

func (fullStrategy) GetNodeReservation(_ context.Context, req *evictionv1.GetNodeReservationRequest) (*evictionv1.GetNodeReservationResponse, error) {
	reserved := req.GetCapacity().GetMemoryBytes() / 10
	return &evictionv1.GetNodeReservationResponse{Reserved: &typesv1.ResourceList{MemoryBytes: &reserved}}, nil
}

func TestEvictionOptionalInterfacesAbsent(t *testing.T) {
	h := sdktest.InProcess(t, info(sdk.KindEviction), strategy{})
	mustConfigure(t, h)
	if _, err := h.Eviction().Synchronize(t.Context(), &evictionv1.SynchronizeRequest{}); err != nil {
		t.Fatalf("Synchronize: %v", err)
	}
	_, err := h.Eviction().Admit(t.Context(), &evictionv1.AdmitRequest{})
	wantCode(t, "Admit", err, codes.Unimplemented)
	_, err = h.Eviction().GetNodeReservation(t.Context(), &evictionv1.GetNodeReservationRequest{})
	wantCode(t, "GetNodeReservation", err, codes.Unimplemented)
}

func TestEvictionOptionalInterfaces(t *testing.T) {
	h := sdktest.InProcess(t, info(sdk.KindEviction), fullStrategy{})
	if caps, want := h.Capabilities(), []string{sdk.CapabilityEvictionAdmit, sdk.CapabilityEvictionReservation}; !slices.Equal(caps, want) {
		t.Errorf("capabilities %v, want %v", caps, want)
	}
	mustConfigure(t, h)
	admit, err := h.Eviction().Admit(t.Context(), &evictionv1.AdmitRequest{Pod: &typesv1.Pod{QosClass: "BestEffort"}})
	if err != nil || admit.GetAdmit() || admit.GetReason() != "Evicted" {
		t.Errorf("Admit(BestEffort) = %v, %v", admit, err)
	}
	capacity := int64(1000)
	res, err := h.Eviction().GetNodeReservation(t.Context(), &evictionv1.GetNodeReservationRequest{Capacity: &typesv1.ResourceList{MemoryBytes: &capacity}})
	if err != nil || res.GetReserved().GetMemoryBytes() != 100 {
		t.Errorf("GetNodeReservation = %v, %v", res, err)
	}
}
