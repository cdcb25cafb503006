package pleg

import "k8s.io/apimachinery/pkg/types"

// PodLifecycleEventType is what happened to a pod, by upstream's names.
type PodLifecycleEventType string

const (
	// ContainerStarted: a container (or the pod's sandbox) is now running.
	ContainerStarted PodLifecycleEventType = "ContainerStarted"
	// ContainerDied: a container (or sandbox) is now exited, or vanished
	// without being seen exited.
	ContainerDied PodLifecycleEventType = "ContainerDied"
	// ContainerRemoved: a container (or sandbox) is gone from the runtime.
	ContainerRemoved PodLifecycleEventType = "ContainerRemoved"
	// ContainerChanged: a container moved to created or unknown. It makes
	// PLEG refresh the pod's status in the cache but is not delivered, as
	// upstream: nothing acts on it, and a container being created is the
	// pod worker's own doing.
	ContainerChanged PodLifecycleEventType = "ContainerChanged"
)

// PodLifecycleEvent tells the sync loop that a pod changed on the runtime.
type PodLifecycleEvent struct {
	// ID is the pod's UID.
	ID types.UID
	// Type is what happened.
	Type PodLifecycleEventType
	// Data is the CRI ID of the container or sandbox it happened to.
	Data string
}
