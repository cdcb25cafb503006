package planner

import (
	"fmt"
	"strings"

	cgroupv1 "github.com/microlet/microlet/proto/microlet/cgroup/v1"
	"github.com/microlet/microlet/sdk"
)

// insufficientPrefix starts every resource-fit reason (upstream
// lifecycle.InsufficientResourcePrefix): OutOfcpu, OutOfmemory,
// OutOfephemeral-storage, OutOfpods, OutOf<resource>.
const insufficientPrefix = "OutOf"

// Admit decides whether a pod fits the node next to the pods already
// admitted, as the kubelet's predicate admit handler does with the
// scheduler's resource fit (pkg/kubelet/lifecycle/predicate.go,
// pkg/scheduler/framework/plugins/noderesources/fit.go): the pod count
// first, then cpu, memory, ephemeral-storage and every other resource the
// pod requests, against node allocatable minus what the admitted pods
// request. Extended resources the node does not offer are not checked, as
// upstream. Only the first shortfall is reported, as upstream.
func Admit(req *cgroupv1.AdmitRequest) (*cgroupv1.AdmitResponse, error) {
	pod := req.GetPod()
	if pod.GetUid() == "" {
		return nil, sdk.Invalid("the request has no pod, or a pod without a uid")
	}
	if req.GetNode().GetAllocatable() == nil {
		return nil, sdk.Invalid("the request's node has no allocatable resources")
	}
	alloc := amountsOf(req.GetNode().GetAllocatable())
	used := amounts{}
	for _, other := range req.GetAdmittedPods() {
		used.add(podRequests(other))
	}
	request := podRequests(pod)
	for name := range request {
		if _, offered := alloc[name]; isExtended(name) && !offered {
			delete(request, name)
		}
	}
	if short, ok := firstShortfall(request, used, alloc, int64(len(req.GetAdmittedPods()))); ok {
		return &cgroupv1.AdmitResponse{Reason: insufficientPrefix + short.name, Message: short.message()}, nil
	}
	return &cgroupv1.AdmitResponse{Admit: true}, nil
}

// shortfall is one resource the node lacks for a pod (upstream
// InsufficientResourceError).
type shortfall struct {
	name                         string
	requested, used, allocatable int64
}

func (s shortfall) message() string {
	return fmt.Sprintf("Node didn't have enough resource: %s, requested: %d, used: %d, capacity: %d",
		s.name, s.requested, s.used, s.allocatable)
}

// firstShortfall checks the resources in upstream's order (fitsRequest):
// pods, cpu, memory, ephemeral-storage, then the scalar resources, which
// upstream visits in map order and this visits by name.
func firstShortfall(request, used, alloc amounts, admittedPods int64) (shortfall, bool) {
	if admittedPods+1 > alloc[resourcePods] {
		return shortfall{resourcePods, 1, admittedPods, alloc[resourcePods]}, true
	}
	order := []string{resourceCPU, resourceMemory, resourceEphemeralStorage}
	for _, name := range sortedKeys(request) {
		if isScalar(name) {
			order = append(order, name)
		}
	}
	for _, name := range order {
		if r := request[name]; r > 0 && r > alloc[name]-used[name] {
			return shortfall{name, r, used[name], alloc[name]}, true
		}
	}
	return shortfall{}, false
}

// isScalar reports the resources the scheduler counts besides cpu, memory,
// ephemeral-storage and pods (upstream v1helper.IsScalarResourceName).
func isScalar(name string) bool {
	return isExtended(name) || isHugePages(name) || strings.Contains(name, "kubernetes.io/") ||
		strings.HasPrefix(name, "attachable-volumes-")
}
