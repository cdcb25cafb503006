package nodestatus

import (
	"fmt"
	goruntime "runtime"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	reasons "github.com/microlet/microlet/core/cluster/events"
)

// SetStatus writes the facts into node's status as the kubelet's setters
// do (defaultNodeStatusFuncs, in their order), keeping what the facts do
// not own: cluster-level extended resources, transition times of
// conditions that did not change. It returns the node events the changes
// call for.
func SetStatus(node *v1.Node, f Facts, now time.Time) []Event {
	var events []Event
	setAddresses(node, f)
	events = append(events, setMachineInfo(node, f)...)
	info := &node.Status.NodeInfo
	info.KernelVersion, info.OSImage = f.KernelVersion, f.OSImage
	info.ContainerRuntimeVersion = f.ContainerRuntimeVersion
	info.KubeletVersion = f.KubeletVersion
	// Deprecated, and cleared as the kubelet does with
	// DisableNodeKubeProxyVersion (on by default since 1.33).
	info.KubeProxyVersion = ""
	info.OperatingSystem, info.Architecture = goruntime.GOOS, goruntime.GOARCH
	node.Status.DaemonEndpoints = v1.NodeDaemonEndpoints{KubeletEndpoint: v1.DaemonEndpoint{Port: f.KubeletPort}}
	node.Status.Images = f.Images

	ts := metav1.NewTime(now)
	for _, p := range pressures(f) {
		if e, ok := setPressure(node, p, ts); ok {
			events = append(events, nodeEvent(node.Name, e))
		}
	}
	if e, ok := setReady(node, f, ts); ok {
		events = append(events, nodeEvent(node.Name, e))
	}
	return events
}

// setAddresses: InternalIP for each node IP, then the Hostname (the
// kubelet's NodeAddress without a cloud provider).
func setAddresses(node *v1.Node, f Facts) {
	addresses := make([]v1.NodeAddress, 0, len(f.NodeIPs)+1)
	for _, ip := range f.NodeIPs {
		addresses = append(addresses, v1.NodeAddress{Type: v1.NodeInternalIP, Address: ip})
	}
	node.Status.Addresses = append(addresses, v1.NodeAddress{Type: v1.NodeHostName, Address: f.Hostname})
}

// setMachineInfo sets capacity, allocatable and the machine's identities
// (MachineInfo). Capacity is updated, not replaced: other agents may
// advertise cluster-level extended resources there.
func setMachineInfo(node *v1.Node, f Facts) []Event {
	var events []Event
	info := &node.Status.NodeInfo
	info.MachineID, info.SystemUUID = f.MachineID, f.SystemUUID
	if info.BootID != "" && info.BootID != f.BootID {
		events = append(events, Event{Type: v1.EventTypeWarning, Reason: reasons.NodeRebooted,
			Message: fmt.Sprintf("Node %s has been rebooted, boot id: %s", node.Name, f.BootID)})
	}
	info.BootID = f.BootID

	if node.Status.Capacity == nil {
		node.Status.Capacity = v1.ResourceList{}
	}
	for name, q := range f.Capacity {
		node.Status.Capacity[name] = q.DeepCopy()
	}
	for name, q := range f.DeviceCapacity {
		node.Status.Capacity[name] = q.DeepCopy()
	}
	for _, name := range f.RemovedDevices {
		node.Status.Capacity[name] = *resource.NewQuantity(0, resource.DecimalSI)
	}
	// A huge page size the machine no longer has is no longer capacity.
	for name := range node.Status.Capacity {
		if _, ok := f.Capacity[name]; isHugePages(name) && !ok {
			delete(node.Status.Capacity, name)
		}
	}

	// Allocatable follows capacity: what the core computed, the devices'
	// healthy count, and capacity itself for what nobody reserves.
	alloc := v1.ResourceList{}
	for name, q := range node.Status.Capacity {
		alloc[name] = q.DeepCopy()
	}
	for name, q := range f.Allocatable {
		alloc[name] = q.DeepCopy()
	}
	for name, q := range f.DeviceAllocatable {
		alloc[name] = q.DeepCopy()
	}
	node.Status.Allocatable = alloc
	return events
}

// pressure is one of the eviction manager's node conditions, with the
// kubelet's reasons, messages and events (MemoryPressureCondition, ...).
type pressure struct {
	condition                   v1.NodeConditionType
	under                       bool
	trueReason, trueMessage     string
	falseReason, falseMessage   string
	trueEventReason, falseEvent string
}

func pressures(f Facts) []pressure {
	return []pressure{
		{v1.NodeMemoryPressure, f.MemoryPressure,
			"KubeletHasInsufficientMemory", "kubelet has insufficient memory available",
			"KubeletHasSufficientMemory", "kubelet has sufficient memory available",
			reasons.NodeHasInsufficientMemory, reasons.NodeHasSufficientMemory},
		{v1.NodeDiskPressure, f.DiskPressure,
			"KubeletHasDiskPressure", "kubelet has disk pressure",
			"KubeletHasNoDiskPressure", "kubelet has no disk pressure",
			reasons.NodeHasDiskPressure, reasons.NodeHasNoDiskPressure},
		{v1.NodePIDPressure, f.PIDPressure,
			"KubeletHasInsufficientPID", "kubelet has insufficient PID available",
			"KubeletHasSufficientPID", "kubelet has sufficient PID available",
			reasons.NodeHasInsufficientPID, reasons.NodeHasSufficientPID},
	}
}

// setPressure updates one pressure condition; a new one starts Unknown, so
// that its first status is a transition. It returns the event reason of a
// transition.
func setPressure(node *v1.Node, p pressure, now metav1.Time) (string, bool) {
	c := condition(node, p.condition)
	c.LastHeartbeatTime = now
	status, reason, message, event := v1.ConditionFalse, p.falseReason, p.falseMessage, p.falseEvent
	if p.under {
		status, reason, message, event = v1.ConditionTrue, p.trueReason, p.trueMessage, p.trueEventReason
	}
	if c.Status == status {
		return "", false
	}
	c.Status, c.Reason, c.Message, c.LastTransitionTime = status, reason, message, now
	return event, true
}

// setReady sets the Ready condition (ReadyCondition): True unless the
// runtime, the network or PLEG says otherwise, or capacity lacks a resource
// the scheduler needs. It returns NodeReady or NodeNotReady on a change.
func setReady(node *v1.Node, f Facts, now metav1.Time) (string, bool) {
	errs := append([]error(nil), f.NotReady...)
	var missing []string
	for _, name := range []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourcePods, v1.ResourceEphemeralStorage} {
		if _, ok := node.Status.Capacity[name]; !ok {
			missing = append(missing, string(name))
		}
	}
	if len(missing) > 0 {
		errs = append(errs, fmt.Errorf("missing node capacity for resources: %s", strings.Join(missing, ", ")))
	}
	want := v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady",
		Message: "kubelet is posting ready status", LastHeartbeatTime: now}
	if err := utilerrors.NewAggregate(errs); err != nil {
		want.Status, want.Reason, want.Message = v1.ConditionFalse, "KubeletNotReady", err.Error()
	}
	_, existed := findCondition(node, v1.NodeReady)
	c := condition(node, v1.NodeReady)
	changed := c.Status != want.Status
	want.LastTransitionTime = c.LastTransitionTime
	if changed {
		want.LastTransitionTime = now
	}
	*c = want
	// A condition created just now is not a transition to report.
	if !changed || !existed {
		return "", false
	}
	if want.Status == v1.ConditionTrue {
		return reasons.NodeReady, true
	}
	return reasons.NodeNotReady, true
}

// condition finds the condition of type t in node, appending it as Unknown
// when missing, so that its first status is a transition.
func condition(node *v1.Node, t v1.NodeConditionType) *v1.NodeCondition {
	if c, ok := findCondition(node, t); ok {
		return c
	}
	node.Status.Conditions = append(node.Status.Conditions, v1.NodeCondition{Type: t, Status: v1.ConditionUnknown})
	return &node.Status.Conditions[len(node.Status.Conditions)-1]
}

func findCondition(node *v1.Node, t v1.NodeConditionType) (*v1.NodeCondition, bool) {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == t {
			return &node.Status.Conditions[i], true
		}
	}
	return nil, false
}

// schedulableEvent is the event of a cordon or uncordon seen since the
// last status computation (recordNodeSchedulableEvent): NodeNotSchedulable
// or NodeSchedulable.
func schedulableEvent(node *v1.Node, wasUnschedulable bool) (Event, bool) {
	switch {
	case node.Spec.Unschedulable == wasUnschedulable:
		return Event{}, false
	case node.Spec.Unschedulable:
		return nodeEvent(node.Name, reasons.NodeNotSchedulable), true
	default:
		return nodeEvent(node.Name, reasons.NodeSchedulable), true
	}
}

// nodeEvent is the kubelet's recordNodeStatusEvent.
func nodeEvent(node, reason string) Event {
	return Event{Type: v1.EventTypeNormal, Reason: reason, Message: fmt.Sprintf("Node %s status is now: %s", node, reason)}
}
