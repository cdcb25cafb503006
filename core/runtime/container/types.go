// Package container is the runtime's view of pods and containers, as read
// back from CRI: what the runtime manager acts on, what PLEG compares
// between relists, and what pod status is generated from. It holds no
// logic that talks to the runtime.
package container

import (
	"time"

	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// State is a container's state as CRI reports it.
type State string

const (
	StateCreated State = "created"
	StateRunning State = "running"
	StateExited  State = "exited"
	StateUnknown State = "unknown"
)

// StateFromCRI is the state of a CRI container state.
func StateFromCRI(s runtimeapi.ContainerState) State {
	switch s {
	case runtimeapi.ContainerState_CONTAINER_CREATED:
		return StateCreated
	case runtimeapi.ContainerState_CONTAINER_RUNNING:
		return StateRunning
	case runtimeapi.ContainerState_CONTAINER_EXITED:
		return StateExited
	}
	return StateUnknown
}

// MayRun says whether a container in this state may be running: killing a
// pod must stop one in an unknown state too.
func (s State) MayRun() bool { return s == StateRunning || s == StateUnknown }

// SandboxState is a pod sandbox's state as CRI reports it.
type SandboxState string

const (
	SandboxReady    SandboxState = "ready"
	SandboxNotReady SandboxState = "notready"
)

// ContainerStatus is one container instance. A container that restarted
// has one instance per attempt until garbage collection removes old ones.
type ContainerStatus struct {
	ID        string
	Name      string
	SandboxID string
	State     State
	CreatedAt time.Time
	// StartedAt and FinishedAt are zero when the container has not started
	// or not finished.
	StartedAt  time.Time
	FinishedAt time.Time
	ExitCode   int32
	// Reason and Message are the runtime's (e.g. "OOMKilled", "Completed",
	// "Error") or the termination message the runtime manager read.
	Reason  string
	Message string
	// Image is the image as the pod spec names it; ImageRef the resolved
	// reference (digest) the runtime ran; ImageID the image's ID.
	Image    string
	ImageRef string
	ImageID  string
	// Hash is the spec hash recorded when the instance was created; a
	// different hash means the spec changed and the container is replaced.
	Hash uint64
	// RestartCount is the number of restarts before this instance.
	RestartCount int
	// Attempt is CRI's metadata attempt number.
	Attempt uint32
}

// SandboxStatus is one pod sandbox instance.
type SandboxStatus struct {
	ID        string
	State     SandboxState
	CreatedAt time.Time
	Attempt   uint32
	// IPs are the pod's addresses, primary first; empty for hostNetwork
	// pods and sandboxes without a network.
	IPs []string
	// HostNetwork is true when the sandbox shares the node's network namespace.
	HostNetwork bool
}

// PodStatus is everything the runtime knows of one pod.
type PodStatus struct {
	UID       types.UID
	Name      string
	Namespace string
	// Sandboxes, newest first.
	Sandboxes []*SandboxStatus
	// Containers holds every instance of every container, newest first.
	Containers []*ContainerStatus
	// Timestamp is when this status was read from the runtime.
	Timestamp time.Time
}

// IPs are the addresses of the newest sandbox.
func (s *PodStatus) IPs() []string {
	if s == nil || len(s.Sandboxes) == 0 {
		return nil
	}
	return s.Sandboxes[0].IPs
}

// Container returns the newest instance of the named container, or nil.
func (s *PodStatus) Container(name string) *ContainerStatus {
	if s == nil {
		return nil
	}
	for _, c := range s.Containers {
		if c.Name == name {
			return c
		}
	}
	return nil
}

// RunningContainers returns the instances that are running now.
func (s *PodStatus) RunningContainers() []*ContainerStatus {
	if s == nil {
		return nil
	}
	var out []*ContainerStatus
	for _, c := range s.Containers {
		if c.State == StateRunning {
			out = append(out, c)
		}
	}
	return out
}

// Pod is a pod as the runtime lists it: enough for PLEG to notice changes
// and for housekeeping to find pods no source wants any more.
type Pod struct {
	UID        types.UID
	Name       string
	Namespace  string
	Sandboxes  []*Sandbox
	Containers []*Container
}

// Sandbox is a listed sandbox.
type Sandbox struct {
	ID        string
	State     SandboxState
	CreatedAt time.Time
}

// Container is a listed container.
type Container struct {
	ID        string
	Name      string
	SandboxID string
	State     State
	CreatedAt time.Time
	Hash      uint64
}

// Pod is the listing form of the status: every container and sandbox, as
// the runtime's ListPods lists them.
func (s *PodStatus) Pod() *Pod {
	return s.listing(func(*ContainerStatus) bool { return true })
}

// RunningPod is the listing form of the status holding what killing the
// pod must stop: its running (or unknown) containers and every sandbox.
func (s *PodStatus) RunningPod() *Pod {
	return s.listing(func(c *ContainerStatus) bool { return c.State.MayRun() })
}

// listing is the status's listing form with the containers keep keeps.
func (s *PodStatus) listing(keep func(*ContainerStatus) bool) *Pod {
	if s == nil {
		return nil
	}
	p := &Pod{UID: s.UID, Name: s.Name, Namespace: s.Namespace}
	for _, c := range s.Containers {
		if keep(c) {
			p.Containers = append(p.Containers, &Container{
				ID: c.ID, Name: c.Name, SandboxID: c.SandboxID, State: c.State, CreatedAt: c.CreatedAt, Hash: c.Hash,
			})
		}
	}
	for _, sb := range s.Sandboxes {
		p.Sandboxes = append(p.Sandboxes, &Sandbox{ID: sb.ID, State: sb.State, CreatedAt: sb.CreatedAt})
	}
	return p
}
