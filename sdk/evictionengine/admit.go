package evictionengine

import (
	"fmt"
	"slices"
	"time"

	evictionv1 "github.com/microlet/microlet/proto/microlet/eviction/v1"
	typesv1 "github.com/microlet/microlet/proto/microlet/types/v1"
	"github.com/microlet/microlet/sdk"
)

const nodeConditionMessageFmt = "The node had condition: %v. "

// AdmitContext is what an admission policy decides on.
type AdmitContext struct {
	Pod *typesv1.Pod
	// Pressure lists the pressure conditions that are True, in the order
	// MemoryPressure, DiskPressure, PIDPressure.
	Pressure []string
	// Synchronized is false until the engine has answered a Synchronize
	// since it started; Now and Evictable are unset until then.
	Synchronized bool
	// Now is the time of the last Synchronize.
	Now time.Time
	// Evictable is the non-critical pods of the last Synchronize, the ones
	// eviction would choose from.
	Evictable []*typesv1.Pod
}

// Admission is a policy's answer. A rejection carries the reason Reason.
type Admission struct {
	Admit bool
	// Message explains a rejection.
	Message string
}

// UpstreamAdmission is the kubelet's rule (eviction manager Admit): without
// pressure, and for critical pods, admit; under MemoryPressure alone, reject
// only BestEffort pods; under any other pressure, reject every pod.
//
// Upstream also admits a BestEffort pod that tolerates the
// node.kubernetes.io/memory-pressure taint; the plugin protocol carries no
// tolerations, so such pods are rejected here.
func UpstreamAdmission(a AdmitContext) Admission {
	if len(a.Pressure) == 0 || a.Pod.GetCritical() {
		return Admission{Admit: true}
	}
	if a.OnlyMemoryPressure() && a.Pod.GetQosClass() != "BestEffort" {
		return Admission{Admit: true}
	}
	return Admission{Message: NodeConditionMessage(a.Pressure)}
}

// NodeConditionMessage is upstream's rejection message:
// "The node had condition: [MemoryPressure]. ".
func NodeConditionMessage(pressure []string) string {
	return fmt.Sprintf(nodeConditionMessageFmt, pressure)
}

// OnlyMemoryPressure reports whether MemoryPressure is the only pressure.
func (a AdmitContext) OnlyMemoryPressure() bool {
	return len(a.Pressure) == 1 && a.Pressure[0] == ConditionMemoryPressure
}

// Admit answers an AdmitRequest with the policy.
func (e *Engine) Admit(req *evictionv1.AdmitRequest) (*evictionv1.AdmitResponse, error) {
	if req.GetPod() == nil {
		return nil, sdk.Invalid("AdmitRequest.pod is not set")
	}
	var pressure []string
	for _, condition := range pressureConditions {
		for _, c := range req.GetConditions() {
			if c.GetType() == condition && c.GetStatus() == "True" && !slices.Contains(pressure, condition) {
				pressure = append(pressure, condition)
			}
		}
	}
	e.mu.Lock()
	last := e.last
	e.mu.Unlock()
	decision := e.policy.Admit(AdmitContext{
		Pod:          req.GetPod(),
		Pressure:     pressure,
		Synchronized: last.synchronized,
		Now:          last.now,
		Evictable:    last.evictable,
	})
	if decision.Admit {
		return &evictionv1.AdmitResponse{Admit: true}, nil
	}
	return &evictionv1.AdmitResponse{Reason: Reason, Message: decision.Message}, nil
}
