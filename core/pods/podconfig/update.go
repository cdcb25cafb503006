package podconfig

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
)

// Op is what a PodUpdate asks of the syncLoop, as upstream's
// kubetypes.PodOperation in incremental mode.
type Op int

const (
	// OpAdd: pods new to the node (also sent, empty, the first time a
	// source is read without pods, so the syncLoop knows it was read).
	OpAdd Op = iota + 1
	// OpUpdate: pods whose spec, labels or annotations changed.
	OpUpdate
	// OpDelete: pods their source asks to delete gracefully (a deletion
	// timestamp was set); the pod stays known until it is removed.
	OpDelete
	// OpRemove: pods that left their source; they are to be stopped.
	OpRemove
	// OpReconcile: pods whose status alone changed.
	OpReconcile
)

func (o Op) String() string {
	switch o {
	case OpAdd:
		return "ADD"
	case OpUpdate:
		return "UPDATE"
	case OpDelete:
		return "DELETE"
	case OpRemove:
		return "REMOVE"
	case OpReconcile:
		return "RECONCILE"
	}
	return fmt.Sprintf("Op(%d)", int(o))
}

// PodUpdate is one change for the syncLoop. The receiver owns the pods.
type PodUpdate struct {
	Op     Op
	Source string
	Pods   []*v1.Pod
}

// RejectedPod is a pod a source offers that the node does not run, and why.
type RejectedPod struct {
	Source string
	Pod    *v1.Pod
	Reason string
}
