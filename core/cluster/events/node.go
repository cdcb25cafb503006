package events

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// Node records the events of the node itself, against NodeRef, as the
// kubelet's recordEvent. The node status's own events (NodeReady,
// NodeHasSufficientMemory, Rebooted, ...) are computed with the status by
// core/cluster/nodestatus, and recorded with Event.
type Node struct {
	recorder Recorder
	ref      *v1.ObjectReference
}

// NewNode records node nodeName's events with r (nil: Nop).
func NewNode(r Recorder, nodeName string) *Node {
	return &Node{recorder: OrNop(r), ref: NodeRef(nodeName)}
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
