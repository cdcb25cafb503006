package events

import (
	"fmt"
	"sync"

	v1 "k8s.io/api/core/v1"
)

// Node records the events of the node itself, against NodeRef, as the
// kubelet's recordNodeStatusEvent and recordEvent.
type Node struct {
	recorder Recorder
	name     string
	ref      *v1.ObjectReference
	reboot   sync.Once
}

// NewNode records node nodeName's events with r (nil: Nop).
func NewNode(r Recorder, nodeName string) *Node {
	return &Node{recorder: OrNop(r), name: nodeName, ref: NodeRef(nodeName)}
}

// Event records an event about the node.
func (n *Node) Event(eventType, reason, message string) {
	n.recorder.Event(n.ref, eventType, reason, message)
}

// Starting records that the agent started, as the kubelet's "Starting
// kubelet." when it starts.
func (n *Node) Starting() {
	n.Event(v1.EventTypeNormal, StartingKubelet, "Starting kubelet.")
}

// StatusEvent records a change of the node's status with upstream's
// message, "Node <name> status is now: <reason>".
func (n *Node) StatusEvent(eventType, reason string) {
	n.recorder.Eventf(n.ref, eventType, reason, "Node %s status is now: %s", n.name, reason)
}

// ConditionTransitions records the events of the node status setters
// (upstream's pkg/kubelet/nodestatus): for each of Ready, MemoryPressure,
// DiskPressure and PIDPressure whose status differs between before (the
// Node's conditions before this update, nil at registration) and after.
// As upstream, a pressure condition seen for the first time records its
// event (NodeHasSufficientMemory at start-up), while Ready records only a
// transition of a condition the node had: a node registered Ready says
// nothing until it goes NotReady.
func (n *Node) ConditionTransitions(before, after []v1.NodeCondition) {
	for _, c := range after {
		prev := findCondition(before, c.Type)
		if prev != nil && prev.Status == c.Status {
			continue
		}
		if c.Type == v1.NodeReady && prev == nil {
			continue
		}
		if reason := conditionReason(c.Type, c.Status); reason != "" {
			n.StatusEvent(v1.EventTypeNormal, reason)
		}
	}
}

// conditionReason is the event reason of a condition turning to status, ""
// for a condition upstream records no event of.
func conditionReason(t v1.NodeConditionType, status v1.ConditionStatus) string {
	reasons := map[v1.NodeConditionType][2]string{ // [true, not true]
		v1.NodeReady:          {NodeReady, NodeNotReady},
		v1.NodeMemoryPressure: {NodeHasInsufficientMemory, NodeHasSufficientMemory},
		v1.NodeDiskPressure:   {NodeHasDiskPressure, NodeHasNoDiskPressure},
		v1.NodePIDPressure:    {NodeHasInsufficientPID, NodeHasSufficientPID},
	}
	pair, ok := reasons[t]
	switch {
	case !ok:
		return ""
	case status == v1.ConditionTrue:
		return pair[0]
	case t != v1.NodeReady && status == v1.ConditionUnknown:
		return "" // upstream's pressure setters never set Unknown
	}
	return pair[1]
}

func findCondition(conditions []v1.NodeCondition, t v1.NodeConditionType) *v1.NodeCondition {
	for i := range conditions {
		if conditions[i].Type == t {
			return &conditions[i]
		}
	}
	return nil
}

// BootID records, once per run, that the node was rebooted when the boot
// ID the Node had (previous, "" for a new Node) is not the machine's
// (current), as upstream's MachineInfo setter.
func (n *Node) BootID(previous, current string) {
	if previous == "" || previous == current {
		return
	}
	n.reboot.Do(func() {
		n.Event(v1.EventTypeWarning, NodeRebooted, fmt.Sprintf("Node %s has been rebooted, boot id: %s", n.name, current))
	})
}

// AllocatableEnforced records that the node's allocatable is enforced on
// the pods' cgroup, as upstream's enforceNodeAllocatableCgroups; err is why
// it is not.
func (n *Node) AllocatableEnforced(cgroup string, err error) {
	if err != nil {
		n.Event(v1.EventTypeWarning, FailedNodeAllocatableEnforcement, fmt.Sprintf("Failed to update Node Allocatable Limits %q: %v", cgroup, err))
		return
	}
	n.Event(v1.EventTypeNormal, SuccessfulNodeAllocatableEnforcement, "Updated Node Allocatable limit across pods")
}
